"""Names a reader writes, and whether the docs hold them.

A reader names a product, a service or a standard with a capital letter past the start of a
sentence, with two capitals or more, or with one past the start of a word (Dropbox, YubiKey,
HIPAA, macOS, iPhone, eBay). When no chunk of the
index holds such a name, the docs say nothing about it: over the development questions, their
conversations and held-out ones, every question that named something no chunk holds was one
the docs do not answer, apart from day names ("last Tuesday"), which are left out with the
months (docs/BENCHMARKS.md, "Follow-ups that name what the docs never mention"). `cap` abstains
on such a follow-up; `fieldguide gaps` takes a cluster of such questions as a missing topic.
Everyday words the docs do not use are no such signal: readers bring their own
("supermarket", "coworker") to questions the docs answer.
"""
from __future__ import annotations

import re

from fieldguide.content_words import stem
from fieldguide.words import words

# A whole word, digits included: "2FA" is one name, not "FA" after a digit.
_NAME = re.compile(r"(?<![\w'’-])\w[\w'’-]*")
# Quoted words are a value the reader typed (a tag they made, a file they named: "I made 'Insurance' a
# child of 'Finance'"): the docs explain what such values do, and never hold the reader's own.
_QUOTED = re.compile(r"(?<!\w)(['‘\"“])([^'‘’\"“”\n]{1,60})(['’\"”])(?!\w)")
_OPENS_SENTENCE = frozenset(".?!:;\"“'‘(")
# Capitalised in English wherever they stand, and naming no thing a product's docs would cover.
CALENDAR_WORDS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
    "august september october november december".split())


# A word with this many digits is a value the reader typed (an archive number, a file name, a
# code: "my labels say DOC00042"), not the name of a thing: the docs show the pattern, never the value.
VALUE_DIGITS = 3


def names_in(question: str) -> list[str]:
    """The words a reader writes as names: capitalised past the start of a sentence, with two
    capitals or more anywhere (HIPAA, YubiKey, macOS, 2FA), or with a capital past a lower-case
    first letter (iPhone, eBay); never "I", a day or month, a value
    with digits (DOC00042), nor words the reader put in quotes ('Finance')."""
    found = []
    quotes = list(_QUOTED.finditer(question))
    quoted = [m.span(2) for m in quotes]
    values = {w for m in quotes for w in _NAME.findall(m.group(2))}  # and the same value named again unquoted
    for match in _NAME.finditer(question):
        if match.group(0) in values or any(start <= match.start() < end for start, end in quoted):
            continue
        word = match.group(0).strip("'’-")
        if not any(c.isalpha() for c in word):  # a number
            continue
        before = question[:match.start()].rstrip()
        opens_sentence = not before or before[-1] in _OPENS_SENTENCE
        capitals = sum(c.isupper() for c in word)
        if re.split("['’]", word)[0] == "I" or stem(word.lower()) in CALENDAR_WORDS:  # I, I'm; Mondays
            continue
        if sum(c.isdigit() for c in word) >= VALUE_DIGITS:  # DOC00042, INV2024: a value the reader typed
            continue
        if capitals >= 2 or (capitals == 1 and (word[0].islower() or not opens_sentence)):
            found.append(word)
    return list(dict.fromkeys(found))


def _forms(word: str) -> set[str]:
    """The word as the index may hold it: as written, stemmed, and without a plural "s"."""
    return {word, stem(word), word[:-1] if word.endswith("s") and len(word) > 3 else word}


def unknown_names(question: str, document_frequency: dict[str, int] | None, known_text: str = "") -> list[str]:
    """The names of `question` that no chunk of the index holds (`document_frequency`: the
    index's term statistics, chunks per word) and that `known_text` (say, the conversation so
    far) does not already use. None known without statistics."""
    if document_frequency is None:
        return []
    known = set(words(known_text))
    unknown = []
    for name in names_in(question):
        parts = words(name)
        if not parts or any(part in known for part in parts):
            continue
        if not any(document_frequency.get(form, 0) for part in parts for form in _forms(part)):
            unknown.append(name)
    return unknown


# A word in this share of the index's chunks or more is the product's own name ("Linkwarden",
# "Firefly III"): beside it, a reader's word names a part of the product ("Linkwarden iOS shortcut"),
# whatever the docs call it.
OWN_NAME_SHARE = 0.05
# An acronym this short names a standard the docs spell out ("Amazon SES" where they write "Amazon
# Simple Email Service (SES)"; "Redis ACL" where "ACL" and "Redis" stand apart).
SHORT_ACRONYM = 4


def name_phrases(question: str, document_frequency: dict[str, int], documents: int) -> list[list[str]]:
    """Runs of two names or more a single space apart ("Google Maps", "Microsoft Teams", "European
    Central Bank"), leaving out short acronyms and the product's own name (`OWN_NAME_SHARE`)."""
    named = set(names_in(question))
    runs, run, previous_end = [], [], None
    for match in _NAME.finditer(question):
        word = match.group(0).strip("'’-")
        own = any(document_frequency.get(part, 0) >= OWN_NAME_SHARE * documents for part in words(word))
        counts = word in named and not own and not (word.isupper() and len(word) <= SHORT_ACRONYM)
        if counts and run and question[previous_end:match.start()] == " ":
            run.append(word)
        else:
            if len(run) > 1:
                runs.append(run)
            run = [word] if counts else []
        previous_end = match.end()
    if len(run) > 1:
        runs.append(run)
    return runs


def unknown_name_phrases(question: str, texts: list[str], document_frequency: dict[str, int] | None,
                         documents: int) -> list[str]:
    """The name phrases of `question` (`name_phrases`) that none of `texts` holds, not even two of
    their names side by side: "Google Maps" where the docs name Google (Google Photos) and maps (the
    places view), but never the two together. `texts` are the sections that search found for the
    question: a section that holds the phrase holds the question's words and is among them. None
    known without statistics, or without texts."""
    if document_frequency is None or not texts:
        return []
    runs = name_phrases(question, document_frequency, documents)
    if not runs:  # most questions: the searched sections' words need not be read
        return []
    held = " " + " ".join(" ".join(words(text)) for text in texts) + " "
    unknown = []
    for run in runs:
        pairs = (" ".join(words(first + " " + second)) for first, second in zip(run, run[1:]))
        if not any(f" {pair} " in held for pair in pairs):
            unknown.append(" ".join(run))
    return unknown
