"""The query pipeline as a LangGraph state machine: typed state, options, wiring.

`graph.graph` holds the module-level compiled graph (what `langgraph.json` points at).
This package file imports nothing, so nodes can import `graph.state` and
`graph.runtime` (the per-run options and resources) without pulling in the wiring.
"""
