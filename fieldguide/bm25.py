"""Okapi BM25 with the index's own term statistics.

The lexical part of the fallback scorer. Standard BM25 (k1 = 1.2, b = 0.75, Lucene's
non-negative idf) over the words of `fieldguide.words`: no stop list, since a word that most
chunks hold has an idf near zero in any language. A chunk's document is its breadcrumb and its
text, the breadcrumb's words counted `HEADING_TF` times (a heading names what the section is
about, as BM25F weighs a title field).

`TermStats` (chunk count, mean length, document frequency of every word) is computed at
ingest over the whole collection and stored with the index manifest; without it (an index
built before it existed) the candidates themselves stand in for the collection. An ingest that
changes a few files need not read the whole collection back: `TermStatsChange` counts the
documents it removes and adds, and `applied_to` turns the stored statistics into the new ones
(the same figures a full count gives, since every figure is a sum over documents).

`relative_scores` divides each BM25 score by the question's total idf: the share of the
question's word weight that a chunk matches, near 0..1 for one occurrence of each word in a
chunk of average length (repeats and short chunks can pass 1, saturating at k1 + 1).
"""
from __future__ import annotations

import base64
import json
import math
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from fieldguide.headings import heading_labels
from fieldguide.words import words

K1 = 1.2
B = 0.75
HEADING_TF = 2
DOCUMENT_WORDS_CACHED = 2048  # texts (chunks, breadcrumbs) whose words are kept; each a few KB


def document_words(heading_path: Sequence[str] | None, text: str) -> list[str]:
    """The words BM25 sees for a chunk: breadcrumb words (HEADING_TF times) and text words."""
    heading = _words_of(" ".join(heading_labels(heading_path)))
    return list(heading * HEADING_TF + _words_of(text or ""))


@lru_cache(maxsize=DOCUMENT_WORDS_CACHED)
def _words_of(text: str) -> tuple[str, ...]:
    # The scorer reads every candidate of every question, and the same chunks come back question
    # after question: their words are kept (a bounded cache, a few MB) instead of cut out again.
    return tuple(words(text))


@dataclass
class TermStats:
    documents: int
    mean_length: float
    document_frequency: dict[str, int] = field(default_factory=dict)

    # An ingest that updates the statistics from a change writes them with this set first, and
    # without it when done: statistics still marked were left by an interrupted ingest, whose
    # writes they may not count, so the next ingest counts the whole collection again.
    ingest_pending: bool = False

    @property
    def total_length(self) -> int:
        return round(self.mean_length * self.documents)

    @classmethod
    def from_documents(cls, documents: Iterable[list[str]]) -> "TermStats":
        df: Counter = Counter()
        count = total = 0
        for document in documents:
            count += 1
            total += len(document)
            df.update(set(document))
        return cls(count, total / count if count else 0.0, dict(df))

    def idf(self, term: str) -> float:
        n = self.document_frequency.get(term, 0)
        return math.log(1.0 + (self.documents - n + 0.5) / (n + 0.5))

    # --- storage: compact text for the manifest -------------------------------------------
    def to_text(self) -> str:
        # the total length as well: the mean, rounded, would drift over many updates
        payload = json.dumps({"documents": self.documents, "mean_length": round(self.mean_length, 3),
                              "total_length": self.total_length, "ingest_pending": self.ingest_pending,
                              "df": self.document_frequency}, ensure_ascii=False, separators=(",", ":"))
        return base64.b64encode(zlib.compress(payload.encode("utf-8"), 9)).decode("ascii")

    @classmethod
    def from_text(cls, text: str | None) -> "TermStats | None":
        if not text:
            return None
        try:
            data = json.loads(zlib.decompress(base64.b64decode(text)).decode("utf-8"))
            documents = int(data["documents"])
            mean = float(data["mean_length"])
            if data.get("total_length") is not None and documents:
                mean = int(data["total_length"]) / documents
            return cls(documents, mean, dict(data["df"]), ingest_pending=bool(data.get("ingest_pending")))
        except (ValueError, KeyError, TypeError, zlib.error):
            return None  # unreadable stats are as good as none: the candidates stand in


@dataclass
class TermStatsChange:
    """What an ingest removed from and added to a collection, as term statistics."""
    documents: int = 0
    length: int = 0
    document_frequency: Counter = field(default_factory=Counter)

    def add(self, document: list[str]) -> None:
        self.documents += 1
        self.length += len(document)
        self.document_frequency.update(set(document))

    def remove(self, document: list[str]) -> None:
        self.documents -= 1
        self.length -= len(document)
        self.document_frequency.subtract(set(document))

    def applied_to(self, stats: TermStats) -> "TermStats | None":
        """The statistics after the change; None when they cannot be right (a count below zero:
        `stats` did not count what the change removed), so the caller counts again."""
        documents = stats.documents + self.documents
        length = stats.total_length + self.length
        frequency = Counter(stats.document_frequency)
        frequency.update(self.document_frequency)  # adds the (signed) changes
        if documents < 0 or length < 0 or any(n < 0 for n in frequency.values()):
            return None
        return TermStats(documents, length / documents if documents else 0.0,
                         {term: n for term, n in frequency.items() if n > 0})


def bm25_scores(query: Sequence[str], documents: Sequence[list[str]], stats: TermStats) -> list[float]:
    """Okapi BM25 of each document for the query words (each distinct word once)."""
    terms = list(dict.fromkeys(query))
    idf = {t: stats.idf(t) for t in terms}
    mean = stats.mean_length or 1.0
    scores = []
    for document in documents:
        counts = Counter(document)
        norm = K1 * (1.0 - B + B * len(document) / mean)
        score = 0.0
        for term in terms:
            tf = counts.get(term)
            if tf:
                score += idf[term] * tf * (K1 + 1.0) / (tf + norm)
        scores.append(score)
    return scores


def relative_scores(query_text: str, documents: Sequence[list[str]], stats: TermStats | None) -> list[float]:
    """BM25 divided by the question's total idf (see the module doc); the candidates' own
    statistics when the index has none."""
    query = words(query_text)
    if not query or not documents:
        return [0.0] * len(documents)
    stats = stats or TermStats.from_documents(documents)
    total = sum(stats.idf(t) for t in dict.fromkeys(query)) or 1.0
    return [score / total for score in bm25_scores(query, documents, stats)]
