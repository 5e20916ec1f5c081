"""Rerankers: score (question, chunk) pairs for the rerank node.

* `CrossEncoderReranker`: a sentence-transformers CrossEncoder (set `reranker_model`,
  e.g. `cross-encoder/ms-marco-MiniLM-L6-v2` for users with internet). Scores are the
  model's raw logits, so `rerank_min` must be set on that scale.
* `LexicalFallbackScorer`: what runs when no cross-encoder is configured (the offline
  default). Score = cosine similarity + LEXICAL_WEIGHT · the chunk's Okapi BM25 score for the
  question, relative to the question's total idf (`fieldguide.bm25`: Unicode words, the
  index's own term statistics, no stop list). The score stays near the cosine scale (about
  0..1.5). See docs/TUNING.md for how the weight was set on both development corpora.
"""
from __future__ import annotations

from functools import lru_cache

from fieldguide.bm25 import B, HEADING_TF, K1, TermStats, document_words, relative_scores
from fieldguide.errors import TORCH_EXTRA, ModelUnavailable
from fieldguide.headings import breadcrumb as heading_breadcrumb
from ingest.dialects import reading_of

LEXICAL_WEIGHT = 0.35


def chunk_text_for_scoring(candidate: dict) -> str:
    """What a reranker reads: the breadcrumb, then the chunk's reading (`ingest.dialects`)."""
    breadcrumb = heading_breadcrumb(candidate.get("heading_path"))
    return f"{breadcrumb}\n{reading_of(candidate)}" if breadcrumb else reading_of(candidate)


class LexicalFallbackScorer:
    name = "lexical-fallback"

    def __init__(self, lexical_weight: float = LEXICAL_WEIGHT):
        self.lexical_weight = lexical_weight

    @property
    def scale(self) -> str:
        """What the scores' scale depends on: a calibration made on another scale does not apply."""
        return f"{self.name} (cosine + {self.lexical_weight:g} x BM25 k1={K1:g} b={B:g} heading_tf={HEADING_TF})"

    def score(self, question: str, candidates: list[dict], intent: str | None = None,
              term_stats: TermStats | None = None, lexical_question: str | None = None) -> list[float]:
        """`term_stats`: the index's (see `fieldguide.bm25`); None: the candidates stand in.
        `lexical_question`: the words the BM25 part reads when they differ from `question` (a
        follow-up's own words, without the topic carried over from the previous turn).
        `intent` is not used: measured on both development corpora, a bonus for screen chunks on
        screen questions brought nothing once the lexical part was BM25 (docs/TUNING.md)."""
        if not candidates:
            return []
        documents = [document_words(c.get("heading_path"), reading_of(c)) for c in candidates]
        lexical = relative_scores(lexical_question or question, documents, term_stats)
        return [float(c["similarity"]) + self.lexical_weight * match for c, match in zip(candidates, lexical)]


class CrossEncoderReranker:
    def __init__(self, model, model_name: str = ""):
        self.model = model
        self.name = "cross-encoder"
        self.scale = f"cross-encoder {model_name}".strip()

    def score(self, question: str, candidates: list[dict], intent: str | None = None,
              term_stats=None, lexical_question: str | None = None) -> list[float]:
        """The model reads the whole question (`lexical_question` is the fallback scorer's)."""
        if not candidates:
            return []
        pairs = [(question, chunk_text_for_scoring(c)) for c in candidates]
        return [float(s) for s in self.model.predict(pairs, show_progress_bar=False)]


@lru_cache(maxsize=4)
def load_cross_encoder(name_or_path: str):
    try:
        from sentence_transformers import CrossEncoder
    except ImportError as exc:  # the torch stack is an extra: the fallback scorer does without it
        raise ModelUnavailable(f"The reranker model {name_or_path!r} (FIELDGUIDE_RERANKER_MODEL) is a "
                               f"sentence-transformers CrossEncoder, which needs torch ({exc}): "
                               f"{TORCH_EXTRA}, or unset FIELDGUIDE_RERANKER_MODEL for the fallback scorer.") from exc
    try:
        return CrossEncoder(name_or_path, device="cpu")
    except Exception as exc:  # missing weights offline, bad path ...
        raise ModelUnavailable(f"cannot load reranker model {name_or_path!r}: {exc}") from exc


def load_reranker(settings):
    """The configured CrossEncoder, or the lexical fallback when none is set."""
    if settings.reranker_model:
        return CrossEncoderReranker(load_cross_encoder(str(settings.reranker_model)), str(settings.reranker_model))
    return LexicalFallbackScorer()
