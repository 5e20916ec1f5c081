"""Rerankers: score (question, chunk) pairs for the rerank node.

* `CrossEncoderReranker`: a sentence-transformers CrossEncoder (set `reranker_model`,
  e.g. `cross-encoder/ms-marco-MiniLM-L6-v2` for users with internet). Scores are the
  model's raw logits, so `rerank_min` must be set on that scale.
* `LexicalFallbackScorer`: what runs when no cross-encoder is configured (the offline
  default). Score = cosine similarity + LEXICAL_WEIGHT · weighted share of the
  question's content words found in the chunk (text and breadcrumb) + HEADING_WEIGHT ·
  share found in the breadcrumb alone + SCREEN_BONUS for a screen chunk when the
  question is about a screen. Words are weighted by their rarity among the candidates
  (a word every candidate has tells them apart not at all). The score stays near the
  cosine scale (about 0..1.5). See docs/TUNING.md for how it was measured.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

from fieldguide.errors import ModelUnavailable

LEXICAL_WEIGHT = 0.25
HEADING_WEIGHT = 0.10
SCREEN_BONUS = 0.05

_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be been before being below between both
    but by can could did do does doing don down during each else few for from further get gets got had has
    have having he her here hers him his how i if in into is it its itself just let me more most my myself
    no nor not now of off on once one only or other our ours out over own same she should so some still
    such than that the their theirs them then there these they this those through to too under until up
    upon us very was we were what when where which while who whom why will with would you your yours
    want wants need needs way ways thing things really actually""".split()
)


def stem(word: str) -> str:
    """A deliberately light stemmer: plural and common verb endings only."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)] + keep
    return word


def terms(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1}


def chunk_text_for_scoring(candidate: dict) -> str:
    """What a reranker reads: the breadcrumb, then the chunk text."""
    breadcrumb = " > ".join(candidate.get("heading_path") or [])
    return f"{breadcrumb}\n{candidate.get('text', '')}" if breadcrumb else candidate.get("text", "")


class LexicalFallbackScorer:
    name = "lexical-fallback"

    def score(self, question: str, candidates: list[dict], intent: str | None = None) -> list[float]:
        wanted = terms(question)
        if not candidates:
            return []
        body_terms = [terms(c.get("text", "")) for c in candidates]
        head_terms = [terms(" ".join(c.get("heading_path") or [])) for c in candidates]
        df = Counter(t for body, head in zip(body_terms, head_terms) for t in (body | head) & wanted)
        n = len(candidates)
        weight = {t: math.log((n + 1) / (df[t] + 0.5)) for t in wanted}
        total = sum(weight.values()) or 1.0
        scores = []
        for c, body, head in zip(candidates, body_terms, head_terms):
            coverage = sum(weight[t] for t in wanted & (body | head)) / total
            in_heading = sum(weight[t] for t in wanted & head) / total
            bonus = SCREEN_BONUS if intent == "screen" and c.get("content_kind") == "screen" else 0.0
            scores.append(float(c["similarity"]) + LEXICAL_WEIGHT * coverage + HEADING_WEIGHT * in_heading + bonus)
        return scores


class CrossEncoderReranker:
    def __init__(self, model):
        self.model = model
        self.name = "cross-encoder"

    def score(self, question: str, candidates: list[dict], intent: str | None = None) -> list[float]:
        if not candidates:
            return []
        pairs = [(question, chunk_text_for_scoring(c)) for c in candidates]
        return [float(s) for s in self.model.predict(pairs, show_progress_bar=False)]


@lru_cache(maxsize=4)
def load_cross_encoder(name_or_path: str):
    try:
        from sentence_transformers import CrossEncoder

        return CrossEncoder(name_or_path, device="cpu")
    except Exception as exc:  # missing weights offline, bad path ...
        raise ModelUnavailable(f"cannot load reranker model {name_or_path!r}: {exc}") from exc


def load_reranker(settings):
    """The configured CrossEncoder, or the lexical fallback when none is set."""
    if settings.reranker_model:
        return CrossEncoderReranker(load_cross_encoder(str(settings.reranker_model)))
    return LexicalFallbackScorer()
