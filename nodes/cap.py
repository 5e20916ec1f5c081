"""cap: a strict minimum on the rerank score and a hard maximum number of chunks.

With `dedupe` on, a candidate whose text nearly repeats a better-ranked one (the same
section copied into two pages, say) is dropped before the maximum is applied, so the
slots and the budget go to distinct content.

When nothing survives, the turn abstains: the generator will say the docs do not
cover the question and name the nearest sections (the best search results).
"""
from __future__ import annotations

import re

from langchain_core.runnables import RunnableConfig

from graph.runtime import Stopwatch, options_for, with_stage, with_timing

NEAREST_SECTIONS = 3
DUPLICATE_OVERLAP = 0.8  # Jaccard of word trigrams; on the dev corpus copies sit at 0.8-1.0, nearly all other pairs below 0.5
_WORD = re.compile(r"\w+")


def shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i:i + 3]) for i in range(max(1, len(words) - 2))}


def drop_near_duplicates(ranked: list[dict], overlap: float = DUPLICATE_OVERLAP) -> list[dict]:
    """`ranked` without candidates whose text nearly repeats a better-ranked one's."""
    kept, kept_shingles = [], []
    for candidate in ranked:
        own = shingles(candidate.get("text") or "")
        if any(len(own & other) >= overlap * len(own | other) for other in kept_shingles):
            continue
        kept.append(candidate)
        kept_shingles.append(own)
    return kept


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
        kept = [c for c in ranked if c["rerank_score"] >= options.rerank_min]
        if options.dedupe:
            kept = drop_near_duplicates(kept)
        kept = kept[: max(0, options.max_chunks)]
        abstain = not kept
        nearest = nearest_sections(state.get("search_results") or []) if abstain else []
    return {
        "cap_results": kept,
        "abstain": abstain,
        "nearest": nearest,
        "stages": with_stage(state, "cap", kept),
        "timings_ms": with_timing(state, "cap", sw.ms),
    }
