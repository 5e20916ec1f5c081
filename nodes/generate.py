"""generate: the answer, streamed token by token from the chat model.

The model is called through LangChain's `astream`, so every token reaches LangGraph's
`messages` stream (and `astream_events`, LangServe and LangGraph Studio). Each token is also
written to the `custom` stream as `{"token": text}`: the service and `fieldguide ask` read
that one, which spares every turn the per-token message callbacks. When nothing survived
the filters the model is not called: the answer says plainly that the documentation does
not cover the question and names the nearest sections.
"""
from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import StreamWriter

from fieldguide.chat import bind_generation_options
from graph.runtime import Stopwatch, options_for, resources_for, with_timing


def abstain_message(nearest: list[dict]) -> str:
    text = "The documentation does not cover this question, so I can't answer it from the docs."
    if nearest:
        names = [f"\"{' > '.join(n['heading_path']) or n['source']}\" ({n['source']})" for n in nearest]
        text += " The closest sections are " + ", ".join(names) + "."
    return text


def _nowhere(_chunk) -> None:
    """The stream writer of a call outside a graph run."""


async def generate(state: dict, config: RunnableConfig = None, writer: StreamWriter = _nowhere) -> dict:
    with Stopwatch() as sw:
        if state.get("abstain") or not state.get("prompt_messages"):
            answer = abstain_message(state.get("nearest") or [])
        else:
            options = options_for(config)
            model = resources_for(config).chat_model
            bound = bind_generation_options(model, options.max_answer_tokens, options.temperature)
            parts = []
            async for chunk in bound.astream(state["prompt_messages"], config):
                text = chunk.content if isinstance(chunk.content, str) else str(chunk.content)
                parts.append(text)
                if text:
                    writer({"token": text})
            answer = "".join(parts).strip()
    return {
        "answer": answer,
        "messages": [AIMessage(content=answer)],
        "timings_ms": with_timing(state, "generate", sw.ms),
    }
