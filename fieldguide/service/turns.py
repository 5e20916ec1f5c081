"""One turn of a conversation: run the graph and translate what it streams into events.

The graph is streamed with LangGraph's `tasks` mode (a node starting → `status`), `custom`
mode (the generate node writes each token as `{"token": "..."}` → `token`) and `values`
mode (the final state → `done`). Tokens are not taken from the `messages` mode: it runs a
callback handler on every token of every turn, and that CPU is taken from the thread that
answers HTTP requests. The context blocks are announced once, in a `sources` event, just
before the first token (or before `done` when nothing streamed), so the page never shows
or fetches screenshots of chunks a later filter drops. Each source carries `n`, the number
the answer's citation markers `[n]` use, and `url`, where its lines can be read; the event also
carries the turn's `coverage` verdict once it is known, so a page can mark a partial answer as
its first token arrives; `done`
carries the answer's `citations`, its checked `sentences` and the `standalone_question`
retrieval read.

The vector the embed node made of the standalone question is not part of the graph's output;
it is taken from that node's result as it streams by (`TurnOutcome.query_vector`) and stored
with the turn, so `fieldguide gaps` need not embed the question again.

The conversation's checkpoint is written once, when the turn ends (`durability="exit"`),
instead of after every step; the history the next question sees is the same (a turn that
fails is kept as far as it got, as with per-step saving).
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from fieldguide.errors import FieldguideError
from fieldguide.retrieval import answer_line_citations, coverage_of
from fieldguide.source_links import source_url
from fieldguide.service.conversations import Conversation
from fieldguide.service.failures import reader_message

log = logging.getLogger("fieldguide.service")

SOURCE_FIELDS = ("chunk_id", "source", "heading_path", "images", "part_index", "part_count",
                 "content_kind", "line_start", "line_end", "page_title")


def source_entry(block: dict[str, Any], resolve_image, n: int | None = None,
                 source_url_template: str | None = None) -> dict[str, Any]:
    """A context block as the `sources` event shows it; `n` is the number its citation markers use."""
    entry = {key: block[key] for key in SOURCE_FIELDS if key in block}
    entry.setdefault("heading_path", [])
    if n is not None:
        entry["n"] = n
    images = list(block.get("images") or [])
    entry["images"] = images
    # a labelled doc set's files are served from its own folder (`/docs-assets/@LABEL/...`)
    where = f"@{block['label']}/{entry.get('source', '')}" if block.get("label") else entry.get("source", "")
    entry["image_urls"] = [resolve_image(url, where) for url in images]
    entry["link"] = resolve_image(where, "") if entry.get("source") else None
    if entry.get("source"):
        entry["url"] = source_url(entry["source"], block.get("line_start"), block.get("line_end"), source_url_template,
                                  block.get("label"))
    if block.get("label"):
        entry["label"] = block["label"]
    return entry


@dataclass
class TurnOutcome:
    """How a turn ended: `done` with its final state, or `error` with the message sent."""

    status: str
    final: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    query_vector: list[float] | None = None  # the standalone question's vector, when the graph made one


def failure_message(exc: BaseException, conversation_id: str = "") -> str:
    """A plain sentence for the reader (see failures.py); the details go to the log."""
    return reader_message(exc, conversation_id)


async def finish_exit_save(cancelled: asyncio.CancelledError) -> None:
    """Let the checkpoint save of a cancelled run end before the turn does. A run cancelled
    again while it saves hands its save task over in the exception's args (LangGraph's way to
    let the caller await it); unawaited, it could be cut off by the loop's end, and the turn
    would be missing from the conversation's history."""
    for task in cancelled.args:
        if isinstance(task, asyncio.Task) and not task.done():
            try:
                await asyncio.shield(task)
            except BaseException:  # the save's own failure is LangGraph's to log; the turn ends as cancelled
                pass


async def run_turn(conversation: Conversation, graph, graph_input: dict, config: dict, *,
                   resolve_image, source_url_template: str | None = None,
                   turn_number: int | None = None) -> TurnOutcome:
    """Stream one turn into `conversation`'s log; ends with exactly one `done` or `error`."""
    started = time.perf_counter()
    first_token_ms: float | None = None
    final: dict[str, Any] = {}
    context: list[dict] | None = None
    query_vector: list[float] | None = None
    verdict: str | None = None  # the coverage node's, as soon as it has run
    sources_sent = False

    def send_sources() -> None:
        nonlocal sources_sent
        blocks = context if context is not None else (final.get("context") or [])
        event: dict[str, Any] = {"sources": [source_entry(b, resolve_image, n, source_url_template)
                                             for n, b in enumerate(blocks, start=1)]}
        if verdict or final.get("coverage"):  # so a page can mark a partial answer before its tokens
            event["coverage"] = verdict or final.get("coverage")
        conversation.append("sources", event)
        sources_sent = True

    def send_token(text: str) -> None:
        nonlocal first_token_ms
        if not sources_sent:
            send_sources()
        if first_token_ms is None:
            first_token_ms = round((time.perf_counter() - started) * 1000, 3)
        conversation.append("token", {"text": text})

    conversation.append("status", {"stage": "started"})
    try:
        saving = {"durability": "exit"} if getattr(graph, "checkpointer", None) else {}
        async for mode, chunk in graph.astream(graph_input, config, stream_mode=["tasks", "custom", "values"],
                                               **saving):
            if mode == "tasks":
                if "input" in chunk:  # a task starting (its result comes as "result")
                    conversation.append("status", {"stage": chunk["name"]})
                else:
                    result = chunk.get("result")
                    if isinstance(result, dict) and isinstance(result.get("context"), list):
                        context = result["context"]
                    if isinstance(result, dict) and isinstance(result.get("query_vector"), list):
                        query_vector = result["query_vector"]
                    if isinstance(result, dict) and isinstance(result.get("coverage"), str):
                        verdict = result["coverage"]
            elif mode == "custom":
                if isinstance(chunk, dict) and isinstance(chunk.get("token"), str) and chunk["token"]:
                    send_token(chunk["token"])
            elif mode == "values":
                final = chunk
        if not sources_sent:
            send_sources()
        timings = dict(final.get("timings_ms") or {})
        timings.setdefault("total", round((time.perf_counter() - started) * 1000, 3))
        if first_token_ms is not None:
            timings["first_token"] = first_token_ms
        done = _done_event(final, timings, graph_input.get("question"), turn_number)
        conversation.append("done", done)
        return TurnOutcome("done", {**final, "timings_ms": timings}, query_vector=query_vector)
    except asyncio.CancelledError as cancelled:
        await finish_exit_save(cancelled)
        conversation.append("error", {"message": conversation.cancel_reason or "the answer was cancelled"})
        raise
    except Exception as exc:  # any failure becomes an event; the server carries on
        message = failure_message(exc, conversation.id)
        try:
            conversation.append("error", {"message": message})
        except FieldguideError:  # the log itself is out of reach (Redis down): its lease will end the turn
            log.warning("conversation %s: could not write its error event", conversation.id)
        return TurnOutcome("error", final, message, query_vector)


def _done_event(final: dict[str, Any], timings: dict, question: str | None, turn_number: int | None) -> dict:
    """The `done` event of a finished turn: its answer, coverage, citations (as in the answer line), timings."""
    done = {
        "answer": final.get("answer", ""),
        "intent": final.get("intent"),
        "abstain": bool(final.get("abstain", False)),
        "coverage": coverage_of(final),
        "coverage_reason": final.get("coverage_reason") or "",
        "standalone_question": final.get("standalone_question") or question,
        "citations": answer_line_citations(final.get("citations") or []),  # as in the answer line
        "sentences": list(final.get("sentences") or []),
        "timings_ms": timings,
    }
    if turn_number is not None:  # what POST /conversations/{id}/feedback calls this turn
        done["turn"] = turn_number
    return done
