"""Content words of an answer and its sources, for the checks that compare them.

The sentence check, the evidence picker and the follow-up rules ask whether a sentence's
content words are found in the context. "Content" leaves out English function words (the
stop list) and folds plural and common verb endings (a light stemmer), the same notion the
answer scorer uses, so "invoices" in an answer is found as "invoice" in the docs. Words come
from `fieldguide.words` (any script); in other languages every word counts as content and
nothing is stemmed, which makes the check stricter, never looser.

The retrieval scorer does not use this module: it weighs words by their rarity in the index
instead (`fieldguide.bm25`).
"""
from __future__ import annotations

import math
import re

from fieldguide.words import link_texts, words

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
    """The stemmed content words of `text`."""
    return {stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 1}


def content_word_count(text: str) -> int:
    """How long a text reads: its words of three characters or more that open with a letter and
    are no stop word, link targets left out. The answer's length target counts words this way, so
    the evidence budget does too: a table's pipes, a list's numbers and "the" cost nothing. Outside
    ASCII every word counts (a Han character is a word of its own, see `fieldguide.words`)."""
    return sum(1 for w in words(link_texts(text))
               if w[0].isalpha() and (not w.isascii() or (len(w) > 2 and w not in STOPWORDS)))


def _forms(word: str) -> set[str]:
    """The word as the index's statistics may hold it (they are not stemmed)."""
    forms = {word, stem(word)}
    if word.endswith("s") and len(word) > 3:
        forms.add(word[:-1])
    return forms


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def question_sentences(question: str) -> list[str]:
    """The sentences of a question as a reader writes them: each ends with ".", "!" or "?" before a
    blank, the last wherever the text ends."""
    return [s for s in _SENTENCE_END.split(question.strip()) if s.strip()]


def question_words(question: str) -> list[str]:
    """The content words of a question (as written, lower case, each once): no stop word, no
    number, at least two letters."""
    seen = []
    for w in words(question):
        if w in STOPWORDS or len(w) < 2 or w.isdigit() or w in seen:
            continue
        seen.append(w)
    return seen


def idf_of(word: str, document_frequency: dict[str, int] | None, documents: int) -> float:
    """Lucene's idf of the word's most frequent form in the index; 1.0 each without statistics."""
    if document_frequency is None or documents <= 0:
        return 1.0
    df = max(document_frequency.get(form, 0) for form in _forms(word))
    return math.log(1 + (documents - df + 0.5) / (df + 0.5))


def held_share(question: str, held: set[str], document_frequency: dict[str, int] | None, documents: int) -> float:
    """The share of the question's weight (its content words, each weighed by its idf in the index)
    on words that `held` (stemmed words) holds; 1.0 for a question without content words."""
    own = question_words(question)
    weights = {w: idf_of(w, document_frequency, documents) for w in own}
    total = sum(weights.values())
    if not total:
        return 1.0
    return sum(weight for w, weight in weights.items() if stem(w) in held or w in held) / total

