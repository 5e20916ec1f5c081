"""Unicode word rules, shared by everything that counts or compares words.

The lexical scorer, the index's term statistics and any check that compares the words of an
answer with its sources use these rules, so that a word means the same thing everywhere and in
every script: `[a-z0-9]+` would drop Cyrillic, Greek or accented letters entirely.

A word is a run of letters, combining marks and digits of any script, after NFKC normalisation
(full-width forms, ligatures and composed accents fold to one spelling) and case folding.
Han ideographs and hiragana, written without spaces between words, count as one word each
character (the usual unigram rule for them); a run of katakana is one word. Punctuation, symbols, apostrophes and
underscores separate words. No stop list and no stemming: those are language-specific, and
the scorer weighs words by their rarity in the index instead (see `fieldguide.bm25`).
"""
from __future__ import annotations

import re
import unicodedata

import regex

_UNSPACED = r"\p{Han}\p{Hiragana}"
_WORD = regex.compile(rf"(?V1)[{_UNSPACED}]|[[\p{{L}}\p{{M}}\p{{N}}]--[{_UNSPACED}]]+")
# In ASCII text the letters, marks and digits of any script are a-z, A-Z and 0-9, so the standard
# library's engine finds the same words, about 3.5 times as fast: the scorer cuts the words of
# every candidate of every question, the evidence step and the sentence check those of the context.
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_MARKDOWN_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def link_texts(text: str) -> str:
    """Markdown with every link and image replaced by its text (an image by its alt text): the
    reader sees "settings page", never "../settings/export.md#export", so a target is no word."""
    return _MARKDOWN_LINK.sub(r"\1", text)


def normalise(text: str) -> str:
    """NFKC and case folding (ASCII text only needs lower-casing)."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold()


def words(text: str) -> list[str]:
    """The words of `text` in order, repeats kept, normalised (see the module doc)."""
    if text.isascii():
        return _ASCII_WORD.findall(text.lower())
    return _WORD.findall(normalise(text))


def word_set(text: str) -> set[str]:
    return set(words(text))
