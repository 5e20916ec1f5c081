"""Running the graph for the CLI: result lines for `retrieve --batch`, streaming for `ask`."""
from __future__ import annotations

import time
from typing import Any, AsyncIterator

RESULT_STAGES = ("search", "threshold", "rerank", "cap")


def result_line(question_id: str | None, state: dict, total_ms: float) -> dict[str, Any]:
    """The retrieval result line of DESIGN.md from a graph state."""
    timings = {name: round(ms, 3) for name, ms in (state.get("timings_ms") or {}).items()
               if name not in ("prompt", "generate")}
    timings["total"] = round(total_ms, 3)
    stages = state.get("stages") or {}
    return {
        "id": question_id,
        "intent": state.get("intent"),
        "abstain": bool(state.get("abstain")),
        "context": list(state.get("context") or []),
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
    """Yield ("token", text) while the answer streams, then ("state", final state)."""
    config = run_config(resources, overrides, thread_id)
    start = time.perf_counter()
    final: dict = {}
    async for mode, payload in full_graph.astream({"question": question}, config,
                                                  stream_mode=["custom", "values"]):
        if mode == "custom":  # the generate node writes {"token": text} for every token
            if isinstance(payload, dict) and isinstance(payload.get("token"), str) and payload["token"]:
                yield "token", payload["token"]
        else:
            final = payload
    final = dict(final)
    final["total_ms"] = (time.perf_counter() - start) * 1000.0
    yield "state", final


class open_resources:
    """`with open_resources(settings) as resources:` store opened and index checked; closed after.

    Refuses an empty collection (nothing ingested) and one built with another embedding model.
    """

    def __init__(self, settings):
        self.settings = settings

    def __enter__(self):
        from fieldguide.errors import FieldguideError
        from graph.runtime import Resources

        self.resources = Resources(self.settings)
        try:
            if self.resources.store.manifest() is None:
                raise FieldguideError(
                    f"collection {self.settings.collection} holds no index: run `fieldguide ingest DOCS_DIR` first")
            self.resources.check_manifest()
        except BaseException:
            self.resources.close()
            raise
        return self.resources

    def __exit__(self, *exc):
        self.resources.close()
        return False
