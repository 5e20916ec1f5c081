"""Topic words: what a cluster asks about, and whether the docs use those words or names."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

# A cluster is missing when at least this share of its turns name something no chunk holds.
NAMED_SHARE = 0.5
# Topic words (`topic_words`): the cluster's words closest in meaning to what it asks, read from
# this many of its most-asked wordings.
TOPIC_WORDINGS = 10
TOPIC_WORDS = 3
# A word found in at most this many chunks of the index is at most a passing mention there: a
# section about a topic names it in its heading, which every chunk under that heading carries
# (`fieldguide.bm25.document_words`), or repeats it in its text.
PASSING_MENTION_CHUNKS = 2
# ... and so is a word in a few more chunks (at most this many) that no heading of the index
# holds: the docs mention it here and there, but no section is about it (a section about a topic
# is named after it, and every chunk under that heading carries the name).
FEW_CHUNKS = 5


def unit_mean(vectors) -> list[float]:
    """The mean direction of `vectors` (each normalised first, so none weighs more for its length)."""
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float64)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return matrix.mean(axis=0).tolist()


@dataclass
class TopicWords:
    """The words a cluster turns on, and how much of their weight the docs do not use."""

    words: list[tuple[str, float, int]]  # (word, closeness to the cluster's centroid, chunks that hold it)
    unknown_share: float  # share of the closeness on words the docs only mention (`passing_mention`)
    # the words the docs only mention; None: those in at most PASSING_MENTION_CHUNKS chunks
    unknown_words: list[str] | None = None

    @property
    def unknown(self) -> list[str]:
        if self.unknown_words is not None:
            return list(self.unknown_words)
        return [w for w, _, chunks in self.words if passing_mention(chunks, None)]


def passing_mention(chunks: int, headings: int | None) -> bool:
    """Whether a word held by `chunks` chunks of the index, `headings` of them under a heading
    that names it (None: not known), is at most mentioned in passing there: in at most
    PASSING_MENTION_CHUNKS chunks, or in at most FEW_CHUNKS and in no heading."""
    return chunks <= PASSING_MENTION_CHUNKS or (headings == 0 and chunks <= FEW_CHUNKS)


def topic_words(wordings: Sequence[str], centroid, word_vectors, document_frequency: dict[str, int],
                count: int | None = None, heading_frequency: dict[str, int] | None = None) -> TopicWords | None:
    """The `count` words of `wordings` closest in cosine to `centroid` (the cluster's mean question
    vector), as KeyBERT picks key words: a question's topic is what its vector is mostly made
    of, function words and asides are far from it. `word_vectors(words) -> vectors` embeds
    single words; `document_frequency` is the index's (chunks holding each word). Each topic
    word weighs its closeness (negative closeness counts as none); `unknown_share` is the share
    of that weight on words the docs only mention in passing (`passing_mention`; the heading
    test only when `heading_frequency`, chunks whose heading path holds each word, is given).
    Numbers are left out: they name amounts, not topics. None when there is no word to weigh."""
    import numpy as np

    from fieldguide.words import words as split_words

    candidates = list(dict.fromkeys(w for text in wordings for w in split_words(text) if not w.isdigit()))
    if not candidates:
        return None
    matrix = np.asarray(word_vectors(candidates), dtype=np.float64)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    centre = np.asarray(centroid, dtype=np.float64)
    centre /= max(float(np.linalg.norm(centre)), 1e-12)
    closeness = matrix @ centre
    order = np.argsort(-closeness, kind="stable")[:count or TOPIC_WORDS]
    chosen = [(candidates[i], round(float(closeness[i]), 4), int(document_frequency.get(candidates[i], 0)))
              for i in order]
    mentioned = [w for w, _, n in chosen
                 if passing_mention(n, None if heading_frequency is None else heading_frequency.get(w, 0))]
    total = sum(max(c, 0.0) for _, c, _ in chosen)
    unknown = sum(max(c, 0.0) for w, c, _ in chosen if w in mentioned)
    return TopicWords(chosen, unknown / total if total > 0 else 0.0, mentioned)


def cluster_unknown_names(members: Sequence[str], counts: Counter, document_frequency: dict[str, int] | None
                          ) -> list[str]:
    """The names no chunk of the index holds (`fieldguide.names`) that the cluster's questions use,
    when at least `NAMED_SHARE` of its turns use one; else none. One stray wording does not
    make a cluster of answerable questions missing."""
    from fieldguide.names import unknown_names

    if document_frequency is None or not members:
        return []
    named = {wording: unknown_names(wording, document_frequency) for wording in members}
    turns = sum(counts[w] for w in members)
    if sum(counts[w] for w, names in named.items() if names) < NAMED_SHARE * turns:
        return []
    return list(dict.fromkeys(name for w in members for name in named[w]))
