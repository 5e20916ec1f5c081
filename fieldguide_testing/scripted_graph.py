"""A scripted stand-in for the query graph: same input and output shape, no models, no store.

It streams a fixed answer token by token through a LangChain chat model, so the service
(and anything measuring the service alone, such as `benchmarks/bench_service.py`) sees
exactly what the real graph produces: node updates, `messages` chunks, a final state (with
the citations its answer's markers name). It
also keeps the conversation's questions across turns through the checkpointer, which lets
follow-ups be tested without the real pipeline.
"""
from __future__ import annotations

import asyncio
import contextlib
import operator
import re
import time
from typing import Annotated, Any, AsyncIterator, Callable, Iterator

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.graph import END, START, StateGraph
from langgraph.types import StreamWriter
from typing_extensions import NotRequired, TypedDict

from nodes.citations import cited_numbers, citations_for

DEFAULT_ANSWER = (
    "Open **Bookings → New booking** and fill in the *Boat* and *Start* fields [1].\n\n"
    "![Booking form](images/booking-form.svg)\n\n"
    "| Field | Required |\n| --- | --- |\n| Boat | yes |\n| Skipper | for motor boats |\n\n"
    "The deposit is taken when you press **Confirm**."
)

DEFAULT_CONTEXT = [
    {
        "chunk_id": "screens/booking-form.md#new-booking",
        "group_id": "screens/booking-form.md#new-booking",
        "part_index": 1,
        "part_count": 1,
        "source": "screens/booking-form.md",
        # inline Markdown and an explicit heading id, as mkdocs and Docusaurus headings carry: kept in
        # the path as written; every breadcrumb a reader sees shows the heading as the page does
        "heading_path": ["Booking form", "**Fields** of the [form](booking-form.md) {#fields}"],
        "chunk_type": "subsection",
        "content_kind": "screen",
        "text": "The booking form has the fields Boat, Start, Duration, Skipper and Deposit.",
        "similarity": 0.71,
        "rerank_score": 3.2,
        "images": ["images/booking-form.svg"],
        "line_start": 5,
        "line_end": 12,
    }
]


def split_tokens(text: str) -> list[str]:
    """Word-sized pieces that concatenate back to `text` exactly."""
    return re.findall(r"\s*\S+|\s+", text)


class ScriptedChatModel(BaseChatModel):
    """Streams `answer` in word-sized chunks, optionally `delay` seconds apart."""

    answer: str = DEFAULT_ANSWER
    delay: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop=None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.answer))])

    def _stream(self, messages: list[BaseMessage], stop=None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        for piece in split_tokens(self.answer):
            if self.delay:
                time.sleep(self.delay)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk

    async def _astream(self, messages: list[BaseMessage], stop=None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        for piece in split_tokens(self.answer):
            if self.delay:
                await asyncio.sleep(self.delay)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                await run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


class ScriptedInput(TypedDict):
    question: str
    conversation_id: NotRequired[str | None]


class ScriptedState(TypedDict):
    question: str
    conversation_id: NotRequired[str | None]
    questions: NotRequired[Annotated[list[str], operator.add]]  # every question of the conversation
    intent: NotRequired[str]
    query_vector: NotRequired[list[float]]
    abstain: NotRequired[bool]
    coverage: NotRequired[str]
    coverage_reason: NotRequired[str]
    context: NotRequired[list[dict]]
    answer: NotRequired[str]
    citations: NotRequired[list[dict]]
    standalone_question: NotRequired[str]
    timings_ms: NotRequired[dict[str, float]]


class ScriptedOutput(TypedDict):
    answer: str
    intent: str
    abstain: bool
    coverage: NotRequired[str]
    coverage_reason: NotRequired[str]
    context: list[dict]
    citations: list[dict]
    standalone_question: str
    questions: list[str]
    timings_ms: dict[str, float]


def build_scripted_graph(checkpointer=None, *, answer: str = DEFAULT_ANSWER, context: list[dict] | None = None,
                         token_delay: float = 0.0, fail_with: BaseException | None = None, fail_if: str = "",
                         one_at_a_time: bool = False, embed: Callable[[str], list[float]] | None = None,
                         coverage: tuple[str, str] | None = None):
    """Compile the scripted graph.

    `answer` may contain `{question}` (so concurrent conversations can be told apart) and
    `{turn}` (how many questions the conversation has had, as its checkpoints remember);
    `fail_with` is raised by the generate node for questions containing `fail_if` (all
    questions when it is empty), to exercise fault handling. `one_at_a_time` lets one answer
    be generated at a time (one model per process, as a local llama.cpp model is). With
    `embed(question) -> vector`, an embed node puts the question's vector in the state as
    `query_vector`, as the real graph's embed node does (not part of the output either).
    `coverage` = (verdict, reason) is what the search step puts in the state as the real graph's
    coverage node does (none by default: the state then has no verdict).
    """
    blocks = DEFAULT_CONTEXT if context is None else context
    generating: list[asyncio.Lock] = []  # made on first use, inside the loop that runs the turns

    def route(state: ScriptedState) -> dict:
        intent = "screen" if re.search(r"\b(field|screen|button|form)\b", state["question"], re.I) else "conceptual"
        return {"intent": intent, "questions": [state["question"]], "timings_ms": {"route": 0.01}}

    def search(state: ScriptedState) -> dict:
        verdict = {"coverage": coverage[0], "coverage_reason": coverage[1]} if coverage else {}
        return {"context": [dict(b) for b in blocks], "abstain": not blocks, **verdict,
                "timings_ms": {**state.get("timings_ms", {}), "search": 0.01}}

    def embed_question(state: ScriptedState) -> dict:
        return {"query_vector": [float(x) for x in embed(state["question"])]}

    async def generate(state: ScriptedState, config, writer: StreamWriter) -> dict:
        started = time.perf_counter()
        if fail_with is not None and fail_if in state["question"]:
            raise fail_with
        text = answer.replace("{question}", state["question"]).replace("{turn}", str(len(state.get("questions", []))))
        chat = ScriptedChatModel(answer=text, delay=token_delay)
        pieces = []
        if one_at_a_time and not generating:
            generating.append(asyncio.Lock())
        async with generating[0] if one_at_a_time else contextlib.nullcontext():
            async for chunk in chat.astream([HumanMessage(content=state["question"])], config):
                pieces.append(chunk.content)
                if chunk.content:  # as the real generate node does (nodes/generate.py)
                    writer({"token": chunk.content})
        timings = {**state.get("timings_ms", {}), "generate": round((time.perf_counter() - started) * 1000, 3)}
        text = "".join(pieces)
        return {"answer": text, "citations": citations_for(cited_numbers(text), state.get("context") or []),
                "standalone_question": state["question"], "timings_ms": timings}

    builder = StateGraph(ScriptedState, input_schema=ScriptedInput, output_schema=ScriptedOutput)
    builder.add_node("route", route)
    builder.add_node("search", search)
    builder.add_node("generate", generate)
    builder.add_edge(START, "route")
    if embed is not None:
        builder.add_node("embed", embed_question)
        builder.add_edge("route", "embed")
        builder.add_edge("embed", "search")
    else:
        builder.add_edge("route", "search")
    builder.add_edge("search", "generate")
    builder.add_edge("generate", END)
    return builder.compile(checkpointer=checkpointer)
