"""The wiring of the query graph, in one place.

    condense → route → embed → search → threshold → rerank → weigh_intent → cap → reassemble
      → evidence → coverage → prompt → generate

`condense` opens the turn: a follow-up becomes a standalone question, which every later
step reads. `route` comes next because it is instant (rules over the question's wording)
and steers which chunks `search` favours; `weigh_intent` decides the intent once the
question's vector and reranked candidates are known. `evidence` picks the verbatim quotes
as soon as the context is final, so `generate` can stream them before the model's first
token (and checks the model's sentences as they complete). `coverage` then judges whether
those quotes answer what was asked (`covered`, `partial`, `not_covered`), before the prompt is
built: a `partial` answer opens by saying so. `graph` is compiled without a checkpointer (LangGraph Studio
and `langgraph dev` bring their own); the service calls `build_graph(MemorySaver())`
and keys conversations by `thread_id`. `build_retrieval_graph()` stops after
`reassemble`: what `fieldguide retrieve` runs (no generation).
"""
from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graph.options import QueryOptions
from graph.state import InputState, OutputState, QueryState
from nodes.cap import cap
from nodes.condense import condense
from nodes.coverage import coverage
from nodes.embed import embed
from nodes.evidence import evidence
from nodes.generate import generate
from nodes.prompt import prompt
from nodes.reassemble import reassemble
from nodes.rerank import rerank
from nodes.route import route
from nodes.search import search
from nodes.threshold import threshold
from nodes.weigh_intent import weigh_intent

RETRIEVAL_STEPS = [("condense", condense), ("route", route), ("embed", embed), ("search", search),
                   ("threshold", threshold), ("rerank", rerank), ("weigh_intent", weigh_intent), ("cap", cap),
                   ("reassemble", reassemble)]
ANSWER_STEPS = [("evidence", evidence), ("coverage", coverage), ("prompt", prompt), ("generate", generate)]


def _build(steps, checkpointer=None, name: str = "fieldguide", output_schema=OutputState):
    # The per-run options are the graph's declared context schema (LangGraph Studio, LangServe).
    builder = StateGraph(QueryState, context_schema=QueryOptions, input_schema=InputState,
                         output_schema=output_schema)
    for step, node in steps:
        builder.add_node(step, node)
    names = [step for step, _ in steps]
    builder.add_edge(START, names[0])
    for a, b in zip(names, names[1:]):
        builder.add_edge(a, b)
    builder.add_edge(names[-1], END)
    return builder.compile(checkpointer=checkpointer, name=name)


def build_graph(checkpointer=None):
    """The whole pipeline, question to streamed answer."""
    return _build(RETRIEVAL_STEPS + ANSWER_STEPS, checkpointer, "fieldguide")


def build_retrieval_graph():
    """Question to final context, no prompt and no generation; returns the whole state."""
    return _build(RETRIEVAL_STEPS, None, "fieldguide-retrieval", output_schema=QueryState)


graph = build_graph()
