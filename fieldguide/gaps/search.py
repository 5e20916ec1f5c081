"""The broader search a cluster gets, and the order its sections are named in."""
from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

from fieldguide.headings import breadcrumb, heading_labels

BROAD_K = 30  # candidates per search kind (the graph's search takes ~12)


def section_name(source: str, heading_path: Sequence[str]) -> str:
    return f"{source}#{breadcrumb(heading_path)}" if heading_path else source


class BroadSearch:
    """The broader search a cluster gets: dense + hybrid candidates scored by the pipeline's
    scorer, best score per section."""

    def __init__(self, resources, k: int = BROAD_K, labels=None):
        """`labels`: search those doc sets alone, judged by their calibration (one label's own)."""
        self.resources = resources
        self.k = k
        self.labels = tuple(labels) if labels else None
        calibration_for = getattr(resources, "calibration_for", None)
        self.calibration = calibration_for(self.labels) if calibration_for else resources.calibration
        self.term_stats = resources.term_stats
        self._headings: dict[str, int] | None = None

    @property
    def noise(self) -> float:
        return float(self.calibration.rerank_min)

    @property
    def strong(self) -> float:
        return float(self.calibration.rerank_min) + float(self.calibration.abstain_margin)

    @property
    def margin(self) -> float:
        return float(self.calibration.abstain_margin)

    @property
    def document_frequency(self) -> dict[str, int] | None:
        """Chunks of the index holding each word; None for an index built without term statistics."""
        return self.term_stats.document_frequency if self.term_stats is not None else None

    @property
    def heading_frequency(self) -> dict[str, int]:
        """Chunks of the index whose heading path holds each word (read once, headings only)."""
        if self._headings is None:
            from fieldguide.words import words

            counts: Counter = Counter()
            for heading_path, _ in self.resources.store.iter_documents():
                counts.update(set(words(" ".join(heading_labels(heading_path)))))
            self._headings = dict(counts)
        return self._headings

    def candidates(self, question: str, vector: Sequence[float]) -> list[dict]:
        """The broader pool of one wording: `k` dense and `k` hybrid candidates, each chunk once."""
        store = self.resources.store
        if self.labels:
            store = store.limited_to(self.labels)
        pool = {c["chunk_id"]: c for c in store.near_vector(vector, self.k)}
        for c in store.hybrid(question, vector, self.k):
            pool.setdefault(c["chunk_id"], c)
        return list(pool.values())

    def search(self, questions: Sequence[str],
               vectors: Sequence[Sequence[float]]) -> tuple[list[dict], list[list[dict]]]:
        """(sections with the best score any of `questions` gave them, best first by that score
        and their page's support (`page_supported`); each question's own sections, ranked the
        same way by the scores that question gave them)."""
        scorer = self.resources.reranker
        best: dict[tuple[str, tuple[str, ...]], float] = {}
        each = []
        for question, vector in zip(questions, vectors):
            pool = self.candidates(question, vector)
            if not pool:
                continue
            own: dict[tuple[str, tuple[str, ...]], float] = {}
            for candidate, score in zip(pool, scorer.score(question, pool, term_stats=self.term_stats)):
                key = (candidate["source"], tuple(candidate.get("heading_path") or ()))
                own[key] = max(float(score), own.get(key, -math.inf))
            for key, score in own.items():
                best[key] = max(score, best.get(key, -math.inf))
            each.append(ranked_sections(own))
        return ranked_sections(best), each


def ranked_sections(scores: dict[tuple[str, tuple[str, ...]], float]) -> list[dict]:
    """Section records of `scores` ((source, heading path) -> score), in `page_supported` order."""
    return [{"source": s, "heading_path": list(h), "score": round(scores[(s, h)], 4)}
            for s, h in page_supported(scores)]


# A section's rank also weighs its page: this share of the best score another section of the
# same page reached. A page several of whose sections match is about what was asked; a section
# that matches alone, among sections of unrelated pages, is more often a passing likeness.
PAGE_SUPPORT = 0.1


def page_supported(scores: dict[tuple[str, tuple[str, ...]], float], support: float = PAGE_SUPPORT) -> list:
    """Sections, (source, heading path) keys of `scores`, ordered by their score plus `support`
    times the best score of another section of the same page (none: nothing added)."""
    pages: dict[str, list[float]] = {}
    for (source, _), score in scores.items():
        pages.setdefault(source, []).append(score)
    top = {source: sorted(values, reverse=True)[:2] for source, values in pages.items()}

    def supported(key) -> float:
        first = top[key[0]]
        if scores[key] >= first[0]:  # the page's best section: its support is the page's second best
            other = first[1] if len(first) > 1 else 0.0
        else:
            other = first[0]
        return scores[key] + support * max(other, 0.0)

    return sorted(scores, key=lambda key: -supported(key))
