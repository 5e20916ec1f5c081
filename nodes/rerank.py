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
scorer (the margin is the index's unit of standing out), when they match its own words
(`on_page_and_named`). A follow-up often moves to a neighbouring section of that page ("Which of
the user statuses can log in?" after the Public Role; "How does that compare with the token I get
when I log in?" after Static Tokens), which its few words and the carried heading ranked fourth to
fifteenth; over seven sets with conversations, second turns' context_facts_all 0.694 → 0.753 and
answer_facts_all 0.616 → 0.661 on the mean, unchanged on the two sets held out of the design
(docs/TUNING.md, "Follow-ups: the previous answer's page").
"""
from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from fieldguide.bm25 import document_words, relative_scores
from graph.options import options_for
from graph.resources import resources_for
from graph.state import question_of
from graph.timing import timed
from ingest.dialects import reading_of
from nodes.cap import thresholds
from nodes.condense import own_words

# A section on the previous answer's page gets the prior only when it matches the follow-up's own
# words this much (BM25 relative to their idf): any match at all is one on "the" or "I".
PAGE_PRIOR_MIN_MATCH = 0.05


def on_page_and_named(candidates: list[dict], page: str, own: str, term_stats) -> list[bool]:
    """Which candidates sit on `page` and match the follow-up's own words beyond its common ones
    (BM25 relative to the words' idf above `PAGE_PRIOR_MIN_MATCH`): "And if I'd rather get them in
    a Discord channel?" leans on the notifications page's Discord section, not on its Slack one."""
    on_page = [c.get("source") == page for c in candidates]
    if not any(on_page):
        return on_page
    documents = [document_words(c.get("heading_path"), reading_of(c)) for c in candidates]
    return [here and match > PAGE_PRIOR_MIN_MATCH
            for here, match in zip(on_page, relative_scores(own, documents, term_stats))]


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
        bonus = prior * thresholds(options, config)[0]  # the abstain margin: the request's, else the index's
        leaning = on_page_and_named(candidates, page, own_words(state) or question_of(state),
                                    resources_for(config).term_stats)
        scores = [value + (bonus if lean else 0.0) for value, lean in zip(scores, leaning)]
    for candidate, value in zip(candidates, scores):
        candidate["rerank_score"] = round(float(value), 4)
    candidates.sort(key=lambda c: -c["rerank_score"])
    return {"rerank_results": candidates}
