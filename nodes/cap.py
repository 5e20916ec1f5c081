"""cap: a strict minimum on the rerank score and a hard maximum number of chunks.

When nothing survives, the turn abstains: the generator will say the docs do not
cover the question and name the nearest sections (the best search results).
"""
from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from graph.runtime import Stopwatch, options_for, with_stage, with_timing

NEAREST_SECTIONS = 3


def nearest_sections(candidates: list[dict], limit: int = NEAREST_SECTIONS) -> list[dict]:
    """The closest distinct sections, for pointing the reader somewhere when abstaining."""
    seen, nearest = set(), []
    for c in sorted(candidates, key=lambda c: -c["similarity"]):
        key = (c["source"], tuple(c["heading_path"]))
        if key in seen:
            continue
        seen.add(key)
        nearest.append({"source": c["source"], "heading_path": list(c["heading_path"]),
                        "similarity": c["similarity"]})
        if len(nearest) == limit:
            break
    return nearest


def cap(state: dict, config: RunnableConfig = None) -> dict:
    options = options_for(config)
    with Stopwatch() as sw:
        ranked = state.get("rerank_results") or []
        kept = [c for c in ranked if c["rerank_score"] >= options.rerank_min][: max(0, options.max_chunks)]
        abstain = not kept
        nearest = nearest_sections(state.get("search_results") or []) if abstain else []
    return {
        "cap_results": kept,
        "abstain": abstain,
        "nearest": nearest,
        "stages": with_stage(state, "cap", kept),
        "timings_ms": with_timing(state, "cap", sw.ms),
    }
