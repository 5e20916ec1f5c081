"""threshold: drop candidates whose cosine similarity is under `min_similarity`."""
from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from graph.options import options_for
from graph.timing import Stopwatch, with_stage, with_timing


def threshold(state: dict, config: RunnableConfig = None) -> dict:
    options = options_for(config)
    with Stopwatch() as sw:
        kept = [c for c in state.get("search_results") or [] if c["similarity"] >= options.min_similarity]
    return {
        "threshold_results": kept,
        "stages": with_stage(state, "threshold", kept),
        "timings_ms": with_timing(state, "threshold", sw.ms),
    }
