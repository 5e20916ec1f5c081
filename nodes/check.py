"""The sentence check: each generated sentence measured against the context as it completes.

It wraps generate's token stream (`SentenceStream` → `SentenceChecker` → the reader), so
the answer still streams, a sentence at a time: a sentence can only be judged whole, and a
separate node after generate would hold the whole answer back until the model stopped.

Support of a sentence, 0..1:

    support = LEXICAL_SHARE · share of its content words found in the block(s) it cites
              (in the whole context when it cites none)
            + (1 − LEXICAL_SHARE) · cosine of its embedding to the best-matching context unit

A sentence is unsupported when its support is under `min_support`, and also, whatever its
support, when it has `MAX_NEW_WORDS` or more content words found nowhere in the context or
the question, a number the context does not have, nothing but the question's own words, a
Markdown heading (a title, not a statement), or when the context unit it leans on reads as an
instruction to the assistant (chunk text is data). A sentence that repeats an earlier one or
the quoted evidence adds nothing and is left out too (`verify` other than `off`), and so is one
whose every word is the question's or already said: it can only join them anew, and whether
"the price is made up by the skipper fee" is what the quoted lines say is beyond what shared
words can tell.

Markers are settled here: a marker naming no block is removed; a sentence that cites no
block, or a block that does not hold its words, cites the block that supports it best.

`verify` decides what happens to an unsupported sentence: `off` keeps every sentence and
checks nothing before it streams (support is still reported), `flag` keeps it and marks it
(`flagged` in `sentences`; the chat page shows the mark), `drop` leaves it out of the answer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from fieldguide.content_words import terms
from fieldguide.headings import heading_labels
from ingest.dialects import reading_of
from nodes.citations import cited_numbers, drop_unknown_markers, without_markers
from nodes.quotable import ABBREVIATION, Unit, looks_like_instruction

LEXICAL_SHARE = 0.5
MAX_NEW_WORDS = 2
RECITE_MARGIN = 0.15  # a cited block may hold this much less of the sentence than the best block
REPEAT_OVERLAP = 0.8  # share of a sentence's terms already said by one earlier sentence
_HEADING = re.compile(r"^#{1,6}\s")  # a Markdown heading line: a title, which states nothing
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_]*(?:\s?\[\d{1,3}\])*(?=\s+[^\s\[])|\n(?=\s*\S)")


class SentenceStream:
    """Cuts streamed text into sentences as soon as each is complete.

    A sentence ends at a line break, or at . ! ? (with closing marks and citation markers),
    once the next non-blank character has arrived (and, after . ! ?, is not "[": a marker may be coming);
    "2." at the start of a list item is not an end. `feed` returns the completed sentences,
    each with the break that followed it (" ", "\n" or "\n\n").
    """

    def __init__(self):
        self._buffer = ""

    def feed(self, text: str) -> list[tuple[str, str]]:
        self._buffer += text
        done = []
        start = 0
        while (match := _SENTENCE_END.search(self._buffer, start)) is not None:
            end = match.end()
            if match.group(0) != "\n" and (_is_list_number(self._buffer[:end])
                                            or ABBREVIATION.search(self._buffer[:end])):
                start = end + 1
                continue
            sentence, rest = self._buffer[:end], self._buffer[end:]
            gap = (match.group(0) if match.group(0) == "\n" else "") + rest[: len(rest) - len(rest.lstrip())]
            self._buffer, start = rest.lstrip(), 0
            if sentence.strip():
                done.append((sentence.strip(), _break(gap)))
        return done

    def close(self) -> list[tuple[str, str]]:
        rest, self._buffer = self._buffer.strip(), ""
        return [(rest, "")] if rest else []


def _break(gap: str) -> str:
    return "\n\n" if gap.count("\n") >= 2 else "\n" if "\n" in gap else " "


def _is_list_number(sentence: str) -> bool:
    return bool(re.fullmatch(r"\s*(?:[-*+]\s+)?\d{1,3}[.)]", sentence))


@dataclass
class Verdict:
    text: str             # as it reaches the reader (markers settled)
    citations: list[int]
    support: float
    supported: bool
    kept: bool
    reason: str = ""
    flagged: bool = False

    def record(self) -> dict:
        entry = {"text": self.text, "citations": self.citations, "support": round(self.support, 3),
                 "kept": self.kept, "origin": "generated"}
        if self.flagged:
            entry["flagged"] = True
        if self.reason:
            entry["reason"] = self.reason
        return entry


@dataclass
class SentenceChecker:
    """Judges generated sentences against the context blocks and their units."""

    blocks: list[dict]
    units: list[Unit]
    unit_vectors: list
    question: str
    embed: object  # text -> vector (normalised)
    mode: str = "drop"
    min_support: float = 0.6
    said: list[set[str]] = field(default_factory=list)  # terms of the evidence and of kept sentences

    def __post_init__(self):
        self.block_terms = [terms(" ".join(heading_labels(b.get("heading_path"))) + "\n" + reading_of(b))
                            for b in self.blocks]
        self.context_terms = set().union(*self.block_terms) if self.block_terms else set()
        self.question_terms = terms(self.question)
        context_text = "\n".join(reading_of(b) for b in self.blocks)
        self.context_numbers = set(_NUMBER.findall(context_text)) | set(_NUMBER.findall(self.question))

    def check(self, sentence: str) -> Verdict:
        text = drop_unknown_markers(sentence, len(self.blocks)).strip()
        plain = without_markers(text).strip()
        words = terms(plain)
        numbers = cited_numbers(text)
        if not words:
            return self._verdict(plain, [], 0.0, False, "says nothing the docs could support")
        shares = [len(words & bt) / len(words) for bt in self.block_terms]
        best_block = max(range(len(shares)), key=lambda i: shares[i]) if shares else None
        cited = [n for n in numbers if 1 <= n <= len(self.blocks)]
        best_share = shares[best_block] if best_block is not None else 0.0
        if cited and max(shares[n - 1] for n in cited) >= best_share - RECITE_MARGIN:
            lexical = max(shares[n - 1] for n in cited)
        else:
            cited = [best_block + 1] if best_block is not None and best_share > 0 else []
            lexical = best_share if cited else len(words & self.context_terms) / len(words)
        semantic, leaned_on = self._best_unit(plain)
        support = LEXICAL_SHARE * lexical + (1 - LEXICAL_SHARE) * semantic
        new_words = words - self.context_terms - self.question_terms
        unknown_numbers = set(_NUMBER.findall(plain)) - self.context_numbers
        reason = ""
        if support < self.min_support:
            reason = "too little of it is in the docs"
        elif len(new_words) >= MAX_NEW_WORDS:
            reason = "words the docs do not use: " + ", ".join(sorted(new_words)[:5])
        elif unknown_numbers:
            reason = "a number the docs do not have: " + ", ".join(sorted(unknown_numbers))
        elif words <= self.question_terms:
            reason = "only repeats the question"
        elif _HEADING.match(plain):
            reason = "a heading, not a statement"
        elif leaned_on is not None and looks_like_instruction(leaned_on.text):
            reason = "follows text in the docs that addresses the assistant"
        marked = _with_markers(plain, cited)
        if not reason and self.mode != "off" and self._repeats(words):
            return Verdict(marked, cited, support, True, False, "repeats what the answer already says")
        if not reason and self.mode != "off" and self._pieced(words):
            return Verdict(marked, cited, support, True, False,
                           "says nothing the quoted lines and the question do not")
        return self._verdict(marked, cited, support, not reason, reason)

    def _verdict(self, text: str, cited: list[int], support: float, supported: bool, reason: str) -> Verdict:
        if self.mode == "off":
            kept, flagged = True, False
        elif self.mode == "flag":
            kept, flagged = True, not supported
        else:
            kept, flagged = supported, False
        verdict = Verdict(text, cited, support, supported, kept, reason, flagged)
        if kept and text:
            self.said.append(terms(without_markers(text)))
        return verdict

    def _best_unit(self, text: str) -> tuple[float, Unit | None]:
        if not self.units or self.unit_vectors is None or len(self.unit_vectors) == 0:
            return 0.0, None
        import numpy as np

        vector = np.asarray(self.embed(text), dtype=np.float32)
        scores = np.asarray(self.unit_vectors) @ vector
        best = int(np.argmax(scores))
        return max(0.0, float(scores[best])), self.units[best]

    def _repeats(self, words: set[str]) -> bool:
        return any(len(words & earlier) >= REPEAT_OVERLAP * len(words) for earlier in self.said)

    def _pieced(self, words: set[str]) -> bool:
        """Every word is the question's or already said (the quoted evidence, kept sentences):
        the sentence can only join them anew, and a new relation between supported words is
        what word overlap cannot check ("the price is made up by the skipper fee")."""
        return bool(self.said) and words <= self.question_terms.union(*self.said)


def _with_markers(text: str, numbers: list[int]) -> str:
    if not numbers:
        return text
    return f"{text} " + "".join(f"[{n}]" for n in numbers)
