"""rerank: score (question, chunk) pairs and reorder.

The scorer is `Resources.reranker`: a sentence-transformers CrossEncoder when
`reranker_model` is set, otherwise the fallback scorer of `fieldguide.reranker`
(cosine similarity plus the chunk's BM25 score for the question, with the index's own term
statistics). With the
reranker switched off for a request (`configurable: {"reranker": false}`) the
similarity itself is the score.

A follow-up the rules condensed ("Is it free? — about: Plans") is scored with its
whole standalone question by a model, but the fallback scorer's BM25 part reads only the
reader's own words: the carried topic repeats the previous answer's heading word for
word, and headings weigh extra in BM25, so it pulled every follow-up back to the section the
previous turn was answered from, while follow-ups tend to move on to a neighbouring one. The
carried topic still steers the question's vector (search, and the cosine part of the score).
Measured on follow-ups of both development corpora (docs/BENCHMARKS.md, "Follow-ups").

Such a follow-up also scores the sections of the page its previous answer was drawn from
(`follow_up_page`, named by `condense`) `follow_up_page_prior` abstain margins higher, whatever the
scorer (the margin is the index's unit of standing out). A follow-up mostly moves to a neighbouring
section of that page ("Which of the user statuses can log in?" after the Public Role; "How does
that compare with the token I get when I log in?" after Static Tokens), which its few words and the
carried heading ranked fourth to fifteenth; on the five sets with conversations, second turns'
context_facts_all 0.705 → 0.821 (docs/TUNING.md, "Follow-ups: the previous answer's page").
"""
from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from graph.options import options_for
from graph.resources import resources_for
from graph.state import question_of
from graph.timing import timed
from nodes.condense import own_words


def abstain_margin(options, config) -> float:
    """The request's abstain margin, else the index's (its calibration): the unit of the page prior."""
    if options.abstain_margin is not None:
        return float(options.abstain_margin)
    return float(resources_for(config).calibration_for(options.labels).abstain_margin)


@timed("rerank", stage="rerank_results")
def rerank(state: dict, config: RunnableConfig = None) -> dict:
    options = options_for(config)
    candidates = [dict(c) for c in state.get("threshold_results") or []]
    if candidates and options.use_reranker:
        resources = resources_for(config)
        scores = resources.reranker.score(question_of(state), candidates, intent=state.get("intent"),
                                          term_stats=resources.term_stats, lexical_question=own_words(state))
    else:
        scores = [c["similarity"] for c in candidates]
    page, prior = state.get("follow_up_page"), options.follow_up_page_prior
    if candidates and page and prior:
        bonus = prior * abstain_margin(options, config)
        scores = [value + (bonus if c.get("source") == page else 0.0) for c, value in zip(candidates, scores)]
    for candidate, value in zip(candidates, scores):
        candidate["rerank_score"] = round(float(value), 4)
    candidates.sort(key=lambda c: -c["rerank_score"])
    return {"rerank_results": candidates}
