"""Context blocks cut into quotable units: sentences, list items, table rows, code blocks.

Both the evidence step (which quotes units verbatim) and the sentence check (which measures
a generated sentence against them) read the context this way. A unit's `text` is the
Markdown exactly as written, lines of one paragraph or one list item joined by a blank, so a
quote can be matched word for word against its source.

* a paragraph is split into sentences (never after "e.g." and the like);
* a list item is one unit, with its marker ("- ", "3. "); an item over `LONG_UNIT_WORDS`
  is split into sentences, the first keeping the marker;
* a table row is one unit that carries its table's header row (and separator), so a quote
  of the row can show what its cells mean;
* a fenced code block is one unit;
* headings, admonition markers (":::note"), lines holding only images or HTML tags
  (`<br>`, `<div class="browser">`) are not units: they label or decorate, they state nothing. A heading becomes the `label` of the
  units under it (the block's own last heading otherwise).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from fieldguide.headings import heading_label
from ingest.dialects import reading_of

LONG_UNIT_WORDS = 60

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_ADMONITION = re.compile(r"^\s*:::")
_DECORATION = re.compile(r"^\s*(?:!\[[^\]]*\]\([^)]*\)|</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>|<!--.*?-->|\s)+\s*$")
# A sentence ends at . ! or ? (closing quotes or brackets may follow) before a blank and
# something that can open a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+(?=[A-Z0-9\"'\u201c\u2018(\[*_`<])")
ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|approx|incl|no|fig|cf|mr|mrs|ms|dr|st)\.)$", re.IGNORECASE)
_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget)\b.{0,40}\b(?:instructions?|rules?|prompt|above|previous)\b|"
    r"\byou are now\b|\bsystem prompt\b|"
    r"\b(?:assistant|ai|model|chatbot)s?,? (?:must|should) (?:say|reply|answer|respond)\b", re.IGNORECASE)


def looks_like_instruction(text: str) -> bool:
    """Text that addresses the assistant instead of describing the product: data, never quoted as
    evidence, and no sentence that follows it is kept (see nodes/check.py)."""
    return bool(_INSTRUCTION.search(text or ""))


@dataclass(frozen=True)
class Unit:
    """One quotable piece of a context block."""

    block: int       # index of the block in the context (0-based; its citation number is block + 1)
    position: int    # order within the block
    kind: str        # "sentence" | "item" | "row" | "code"
    text: str        # Markdown as written
    group: int       # the paragraph, list or table it belongs to (units of one group are neighbours)
    label: str       # the nearest heading above it
    header: str = ""  # a row's table header and separator lines


def _is_table_line(line: str) -> bool:
    return line.count("|") >= 2 or line.strip().startswith("|")


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (one line of text), abbreviations kept whole."""
    pieces = [p for p in _SENTENCE_END.split(text.strip()) if p and p.strip()]
    sentences: list[str] = []
    for piece in pieces:
        if sentences and ABBREVIATION.search(sentences[-1]):
            sentences[-1] = f"{sentences[-1]} {piece.strip()}"
        else:
            sentences.append(piece.strip())
    return sentences


def _fenced_code(lines: list[str], index: int) -> tuple[str, int]:
    """The code block whose fence opens at `lines[index]`, as one text, and the index of its
    closing fence (len(lines) when it is never closed)."""
    line = lines[index]
    fence = _FENCE.match(line).group(1)
    body = [line.strip()]
    index += 1
    while index < len(lines):
        body.append(lines[index].rstrip())
        if lines[index].strip().startswith(fence):
            break
        index += 1
    return "\n".join(body), index


def split_units(text: str, block: int = 0, label: str = "") -> list[Unit]:
    """The quotable units of one block's text, in order."""
    units: list[Unit] = []
    group = 0
    current_label = label
    paragraph: list[str] = []
    item: list[str] = []
    lines = (text or "").replace("\r\n", "\n").split("\n")

    def add(kind: str, body: str, header: str = "") -> None:
        units.append(Unit(block, len(units), kind, body, group, current_label, header))

    def flush_paragraph() -> None:
        nonlocal group
        if paragraph:
            for sentence in split_sentences(" ".join(line.strip() for line in paragraph)):
                add("sentence", sentence)
            paragraph.clear()
            group += 1

    def flush_item() -> None:
        if item:
            body = " ".join(line.strip() for line in item)
            if len(body.split()) > LONG_UNIT_WORDS:
                first, *rest = split_sentences(body) or [body]
                add("item", first)
                for sentence in rest:
                    add("sentence", sentence)
            else:
                add("item", body)
            item.clear()

    def end_list() -> None:
        nonlocal group
        flush_item()
        group += 1

    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if _FENCE.match(line):
            flush_paragraph(), end_list()
            code, index = _fenced_code(lines, index)
            add("code", code)
            group += 1
        elif not stripped:
            flush_paragraph(), flush_item()
        elif heading := _HEADING.match(line):
            flush_paragraph(), end_list()
            current_label = heading.group(2) or current_label
        elif _ADMONITION.match(line) or _DECORATION.match(line):
            flush_paragraph(), flush_item()
        elif _is_table_line(line) and index + 1 < len(lines) and _SEPARATOR.match(lines[index + 1]):
            flush_paragraph(), end_list()
            header = stripped + "\n" + lines[index + 1].strip()
            index += 2
            while index < len(lines) and lines[index].strip() and _is_table_line(lines[index]):
                add("row", lines[index].strip(), header)
                index += 1
            group += 1
            continue
        elif _ITEM.match(line):
            flush_paragraph(), flush_item()
            item.append(stripped)
        elif item:
            item.append(stripped)  # a continuation line of the item
        else:
            if not paragraph and units and units[-1].group == group and units[-1].kind == "item":
                group += 1  # a paragraph after a list is not one of its items' neighbours
            paragraph.append(stripped)
        index += 1
    flush_paragraph(), flush_item()
    return units


def context_units(blocks: list[dict]) -> list[Unit]:
    """Every block's units, block by block."""
    units: list[Unit] = []
    for number, block in enumerate(blocks):
        path = block.get("heading_path") or []
        units.extend(split_units(reading_of(block), number, heading_label(path[-1]) if path else ""))
    return units
