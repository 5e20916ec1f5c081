"""threshold: drop candidates whose cosine similarity is under `min_similarity`."""
from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from graph.options import options_for
from graph.timing import timed


@timed("threshold", stage="threshold_results")
def threshold(state: dict, config: RunnableConfig = None) -> dict:
    options = options_for(config)
    kept = [c for c in state.get("search_results") or [] if c["similarity"] >= options.min_similarity]
    return {"threshold_results": kept}
