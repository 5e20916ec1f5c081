"""rerank: score (question, chunk) pairs and reorder.

The scorer is `Resources.reranker`: a sentence-transformers CrossEncoder when
`reranker_model` is set, otherwise the fallback scorer of `fieldguide.reranker`
(cosine similarity plus the chunk's BM25 score for the question, with the index's own term
statistics). With the
reranker switched off for a request (`configurable: {"reranker": false}`) the
similarity itself is the score.
"""
from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from graph.runtime import Stopwatch, options_for, resources_for, with_stage, with_timing


def rerank(state: dict, config: RunnableConfig = None) -> dict:
    options = options_for(config)
    candidates = [dict(c) for c in state.get("threshold_results") or []]
    with Stopwatch() as sw:
        if candidates and options.use_reranker:
            resources = resources_for(config)
            scores = resources.reranker.score(state["question"], candidates, intent=state.get("intent"),
                                              term_stats=resources.term_stats)
        else:
            scores = [c["similarity"] for c in candidates]
        for candidate, value in zip(candidates, scores):
            candidate["rerank_score"] = round(float(value), 4)
        candidates.sort(key=lambda c: -c["rerank_score"])
    return {
        "rerank_results": candidates,
        "stages": with_stage(state, "rerank", candidates),
        "timings_ms": with_timing(state, "rerank", sw.ms),
    }
