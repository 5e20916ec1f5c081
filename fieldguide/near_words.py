"""Words close in meaning: how much of a question a text stands for when the reader's words are
not the text's own.

A question word that a text lacks counts by how close in meaning the text's nearest word is
(`near_credit`): the embedding model embeds the word and each content word of the text alone.
Spelling variants and synonyms ("colour"/"color", "photo"/"image") reach cosines of 0.75-0.97,
words merely of the same field ("theme"/"design", "trash"/"delete") 0.45-0.55. The coverage
verdict (`nodes.coverage`) and the narrow-miss rule of `nodes.cap` read questions this way, but
only where the model reads the question as words (`ingest.tokens.reads_as_words`): an English
model cuts Cyrillic into letters, and the vectors of two unrelated words spelled out letter by
letter lie close ("bake sourdough bread" came near a page of booking prices).
"""
from __future__ import annotations

from fieldguide.content_words import STOPWORDS, idf_of, question_words, stem

# A lacking word earns nothing up to a cosine of `low` and its whole weight from `high` (between,
# in proportion). Chosen with the coverage verdict's weights (docs/benchmarks/coverage.md).
NEAR_WORD = {"low": 0.5, "high": 0.8}
MAX_TEXT_WORDS = 400  # the text's words compared with: plenty for a budgeted context, a bound for a huge one


def near_credit(cosine: float) -> float:
    low, high = NEAR_WORD["low"], NEAR_WORD["high"]
    return min(1.0, max(0.0, (cosine - low) / (high - low)))


def stand_ins(missing: list[str], text_words: set[str], embed) -> dict[str, tuple[str, float]]:
    """For each word a text lacks, the text's content word closest to it in meaning and its credit
    (`near_credit`); words with no credit are left out. `embed(texts) -> vectors`."""
    candidates = sorted(w for w in text_words if w.isalpha() and len(w) > 1 and w not in STOPWORDS)[:MAX_TEXT_WORDS]
    if not missing or not candidates:
        return {}
    import numpy as np

    def unit_rows(vectors):
        matrix = np.asarray(vectors, dtype=np.float32)
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)

    cosines = unit_rows(embed(missing)) @ unit_rows(embed(candidates)).T
    found = {}
    for i, word in enumerate(missing):
        j = int(cosines[i].argmax())
        if (credit := near_credit(float(cosines[i, j]))) > 0:
            found[word] = (candidates[j], credit)
    return found


def near_share(question: str, text_words: set[str], document_frequency: dict[str, int] | None, documents: int,
               embed) -> float:
    """The share of the question's weight (its content words by their idf in the index) that a text's
    words hold, each word the text lacks counted by its stand-in's credit; 1.0 for a question without
    content words."""
    own = question_words(question)
    weights = {w: idf_of(w, document_frequency, documents) for w in own}
    total = sum(weights.values())
    if not total:
        return 1.0
    held = {stem(w) for w in text_words}
    found = [w for w in own if stem(w) in held or w in held]
    credited = stand_ins([w for w in own if w not in found], text_words, embed)
    return (sum(weights[w] for w in found) + sum(weights[w] * c for w, (_, c) in credited.items())) / total
