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
