"""Running the graph for the CLI: result lines for `retrieve --batch`, streaming for `ask`."""
from __future__ import annotations

import time
from typing import Any, AsyncIterator

from ingest.dialects import reading_of

RESULT_STAGES = ("search", "threshold", "rerank", "cap")
ANSWER_TIMINGS = ("evidence", "prompt", "generate", "first_token")  # not retrieval's: left out of result lines
# In the state's blocks for citations and the page's breadcrumbs, not in result lines; nor is
# `parent_group_id`, how reassembly finds a parent's intro (should a block ever carry it).
CITATION_ONLY_FIELDS = ("line_start", "line_end", "page_title", "reading", "parent_group_id")
# An answer line's citation, as docs/architecture.md gives it (`label` too, for a labelled doc set's chunk).
ANSWER_LINE_CITATION_FIELDS = ("n", "chunk_id", "source", "heading_path", "line_start", "line_end", "url", "label")


def result_blocks(context: list[dict]) -> list[dict]:
    """Context blocks as the result line shows them: `text` is what the generator reads (the
    block's reading: its Markdown with a docs site's dialect read for its meaning)."""
    return [{k: (reading_of(block) if k == "text" else v) for k, v in block.items() if k not in CITATION_ONLY_FIELDS}
            for block in context or []]


def answer_line_citations(citations: list[dict]) -> list[dict]:
    return [{k: c[k] for k in ANSWER_LINE_CITATION_FIELDS if k in c} for c in citations or []]


def result_line(question_id: str | None, state: dict, total_ms: float) -> dict[str, Any]:
    """The retrieval result line (docs/architecture.md) from a graph state."""
    timings = {name: round(ms, 3) for name, ms in (state.get("timings_ms") or {}).items()
               if name not in ANSWER_TIMINGS}
    timings["total"] = round(total_ms, 3)
    stages = state.get("stages") or {}
    return {
        "id": question_id,
        "intent": state.get("intent"),
        "abstain": bool(state.get("abstain")),
        "context": result_blocks(state.get("context") or []),
        "stages": {name: list(stages.get(name, [])) for name in RESULT_STAGES},
        "timings_ms": timings,
    }


def run_config(resources, overrides: dict | None = None, thread_id: str | None = None) -> dict:
    configurable = {"resources": resources, **(overrides or {})}
    if thread_id:
        configurable["thread_id"] = thread_id
    return {"configurable": configurable}


def retrieve(retrieval_graph, question: str, resources, overrides: dict | None = None) -> tuple[dict, float]:
    """Run the retrieval graph once: (final state, wall-clock milliseconds)."""
    start = time.perf_counter()
    state = retrieval_graph.invoke({"question": question}, run_config(resources, overrides))
    return state, (time.perf_counter() - start) * 1000.0


async def stream_answer(full_graph, question: str, resources, overrides: dict | None = None,
                        thread_id: str | None = None) -> AsyncIterator[tuple[str, Any]]:
    """Yield ("token", text) while the answer streams, then ("state", final state).

    The final state also carries `total_ms` and `first_token_ms` (milliseconds from the start
    of the run to its first token; to the end when nothing streamed)."""
    config = run_config(resources, overrides, thread_id)
    start = time.perf_counter()
    first_token_ms = None
    final: dict = {}
    async for mode, payload in full_graph.astream({"question": question}, config,
                                                  stream_mode=["custom", "values"]):
        if mode == "custom":  # the generate node writes {"token": text} for every token
            if isinstance(payload, dict) and isinstance(payload.get("token"), str) and payload["token"]:
                if first_token_ms is None:
                    first_token_ms = (time.perf_counter() - start) * 1000.0
                yield "token", payload["token"]
        else:
            final = payload
    final = dict(final)
    final["total_ms"] = (time.perf_counter() - start) * 1000.0
    final["first_token_ms"] = first_token_ms if first_token_ms is not None else final["total_ms"]
    yield "state", final


def coverage_of(state: dict) -> str:
    """The state's coverage verdict; a state without one (a graph that ends before the coverage
    node) is `not_covered` when it abstained, else `covered`."""
    value = state.get("coverage")
    if value in ("covered", "partial", "not_covered"):
        return value
    return "not_covered" if state.get("abstain") else "covered"


def answer_line(line_id: str | None, question: str, state: dict) -> dict[str, Any]:
    """The answer line (docs/architecture.md; `ask --batch`) from a final state of `stream_answer`."""
    timings = {name: round(ms, 3) for name, ms in (state.get("timings_ms") or {}).items()}
    timings["first_token"] = round(state.get("first_token_ms") or 0.0, 3)
    timings["total"] = round(state.get("total_ms") or 0.0, 3)
    return {
        "id": line_id,
        "question": question,
        "standalone_question": state.get("standalone_question") or question,
        "intent": state.get("intent"),
        "abstain": bool(state.get("abstain")),
        "coverage": coverage_of(state),
        "coverage_reason": state.get("coverage_reason") or "",
        "answer": state.get("answer", ""),
        "citations": answer_line_citations(state.get("citations") or []),
        "sentences": list(state.get("sentences") or []),
        "context": result_blocks(state.get("context") or []),
        "timings_ms": timings,
    }


async def answer_batch(full_graph, items: list[dict], resources, overrides: dict | None = None):
    """Answer lines, one per question or per turn of a conversation (ids "<id>#<k>"); a turn that
    fails yields {"id", "error"} instead, and the batch goes on.

    `full_graph` must have a checkpointer: every conversation runs in a thread of its own, so
    each turn sees the turns before it; every single question gets a fresh thread."""
    import uuid

    for number, item in enumerate(items, start=1):
        item_id = str(item.get("id", f"q-{number:03d}"))
        thread = f"batch-{uuid.uuid4().hex}"
        turns = item["turns"] if "turns" in item else [item]
        for k, turn in enumerate(turns, start=1):
            question = " ".join(str(turn["question"]).split())
            line_id = f"{item_id}#{k}" if "turns" in item else item_id
            final: dict = {}
            try:
                async for kind, payload in stream_answer(full_graph, question, resources, overrides, thread):
                    if kind == "state":
                        final = payload
            except Exception as exc:  # one failed turn (a model timeout, say) must not lose the rest
                yield {"id": line_id, "error": failure_text(exc)}
                continue
            yield answer_line(line_id, question, final)


def failure_text(exc: BaseException) -> str:
    from fieldguide.errors import FieldguideError

    if isinstance(exc, FieldguideError):
        return str(exc)
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}" + (f": {detail}" if detail else "")


class open_resources:
    """`with open_resources(settings) as resources:` store opened and index checked; closed after.

    Refuses an empty collection (nothing ingested), one built with another embedding model, and
    doc set labels (`labels`, and the settings' default set) the index does not hold.
    """

    def __init__(self, settings, labels=None):
        self.settings = settings
        self.labels = labels

    def __enter__(self):
        from fieldguide.errors import FieldguideError
        from graph.resources import Resources

        self.resources = Resources(self.settings)
        try:
            if self.resources.store.manifest() is None:
                raise FieldguideError(
                    f"collection {self.settings.collection} holds no index: run `fieldguide ingest DOCS_DIR` first")
            self.resources.check_manifest()
            from fieldguide.labels import check_known, parse_labels

            wanted = [*(parse_labels(self.settings.labels) or ()), *(parse_labels(self.labels) or ())]
            if wanted:
                check_known(wanted, self.resources.store.known_labels())
        except BaseException:
            self.resources.close()
            raise
        return self.resources

    def __exit__(self, *exc):
        self.resources.close()
        return False
