"""search: broad nearest-neighbour search with real cosine similarity.

`search_k` candidates over all chunks. Screen and ambiguous questions also search
`screen_k` candidates among screen chunks only and merge them in, so a screen
description that the prose outranks still reaches the filters (the rerank and the
cap decide whether it stays). The two searches are sent at once (`ChunkStore.searches`).

With `hybrid_alpha` set, Weaviate's hybrid (BM25 + vector) query picks the candidates
instead; their `similarity` is still the real cosine, so the threshold means the same. A
follow-up the rules condensed gives the BM25 part only the reader's own words, as the rerank
does (`nodes.rerank`): its carried topic steers the vector.

With `labels` set (the run's option, else FIELDGUIDE_LABELS), both searches see only the chunks
of those doc sets: a Weaviate filter, so no other set's chunk is ever a candidate.
"""
from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from graph.options import options_for
from graph.resources import resources_for
from graph.state import question_of
from graph.timing import timed
from nodes.condense import own_words

SCREEN_INTENTS = ("screen", "ambiguous")


def merge_candidates(*result_lists: list[dict]) -> list[dict]:
    """Union by chunk id, best similarity first (ties keep search order)."""
    best: dict[str, dict] = {}
    for results in result_lists:
        for item in results:
            seen = best.get(item["chunk_id"])
            if seen is None or item["similarity"] > seen["similarity"]:
                best[item["chunk_id"]] = dict(item)
    return sorted(best.values(), key=lambda c: -c["similarity"])


def connect(config: RunnableConfig) -> None:
    """The store opened (once per process)."""
    resources_for(config).store


@timed("search", stage="search_results", untimed=connect)
def search(state: dict, config: RunnableConfig = None) -> dict:
    options = options_for(config)
    store = resources_for(config).store
    if options.labels:
        store = store.limited_to(options.labels)
    vector = state["query_vector"]
    lexical = own_words(state) or question_of(state)

    def nearest(k: int, content_kind: str | None = None):
        if options.hybrid_alpha is None:
            return lambda: store.near_vector(vector, k, content_kind=content_kind)
        # Hybrid ranks by fused BM25+vector score; "similarity" stays the real cosine.
        return lambda: store.hybrid(lexical, vector, k, alpha=options.hybrid_alpha, content_kind=content_kind)

    calls = [nearest(options.search_k)]
    if state.get("intent") in SCREEN_INTENTS and options.screen_k > 0:
        calls.append(nearest(options.screen_k, "screen"))
    return {"search_results": merge_candidates(*store.searches(calls))}
