"""The query pipeline as a LangGraph state machine: typed state, options, wiring.

`graph.graph` holds the module-level compiled graph (what `langgraph.json` points at).
This package file imports nothing, so nodes can import `graph.state` and
`graph.options`, `graph.resources` and `graph.timing` (the per-run options, the shared resources and
the step timings) without pulling in the wiring.
"""
