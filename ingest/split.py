"""The token-safe pass: a chunk too long for the embedding model becomes labelled parts.

A chunk's text is cut into *atoms* at the best boundary available, refining only the
atoms that are still too long: top-level blocks, then list items or table rows (the
table's header row goes with every part that continues the table), then lines,
sentences, words, and as a last resort pieces of a word. A code fence is one block, so
it is only cut when the fence alone is too long. Atoms are packed greedily into parts;
each part after the first opens with a little of its predecessor's end (the overlap).

Every part is a contiguous span of the chunk's text (plus the repeated table header), so
the parts' own spans, put back in order, give the chunk's text again: nothing is lost.

Token counts of spans made of whole lines are sums of per-line counts (exact: the
tokenizer splits at whitespace before anything else), so most text is tokenized once.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from itertools import accumulate

from ingest.markdown import Block

_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=\S)")
_WORD_GAP = re.compile(r"\s+")


@dataclass(slots=True)
class Atom:
    start: int  # char offsets in the chunk text
    end: int
    kind: str  # block | item | table | line | sentence | word | piece
    block: Block | None = None
    header: str | None = None  # table header to repeat when a part opens inside the table
    header_start: int = -1
    tokens: int = 0
    # (first, last) when the atom is known to be whole lines, as `ChunkText.whole_lines`
    # would find: its tokens are then a difference of prefix sums, with nothing to look up.
    lines: tuple[int, int] | None = None


@dataclass
class Part:
    text: str
    start: int  # char offset where the part's text begins in the chunk text (overlap included)
    own_start: int  # where its own content begins (after the overlap)
    end: int
    tokens: int  # tokens of `text` (no special tokens); exact unless `approximate`
    approximate: bool = False  # a word was cut: the sum of pieces may differ from the whole


class ChunkText:
    """A chunk's text with its line offsets and per-line token counts."""

    def __init__(self, text: str, line_tokens: list[int]):
        self.text = text
        self.lines = text.split("\n")
        self.offsets = list(accumulate([len(line) + 1 for line in self.lines[:-1]], initial=0))
        self.ends = [offset + len(line) for offset, line in zip(self.offsets, self.lines)]
        self.prefix = list(accumulate(line_tokens, initial=0))

    def line_span(self, first: int, last: int) -> tuple[int, int] | None:
        """What `whole_lines` finds for the span from the start of line `first` to the end of
        line `last`: the span ends inside an empty last line only when that is its first."""
        return (first, last) if first == last or self.lines[last] else None

    def line_at(self, char: int) -> int:
        return bisect.bisect_right(self.offsets, char) - 1

    def whole_lines(self, start: int, end: int) -> tuple[int, int] | None:
        """(first, last) line when [start, end) runs from a line start to a line end."""
        first, last = self.line_at(start), self.line_at(max(end - 1, start))
        if self.offsets[first] == start and self.ends[last] == end:
            return first, last
        return None


class Splitter:
    def __init__(self, counter, overlap_tokens: int):
        self.counter = counter
        self.overlap_tokens = overlap_tokens

    # ------------------------------------------------------------------ counting
    def _count(self, chunk: ChunkText, atoms: list[Atom]) -> None:
        pending = []
        for atom in atoms:
            lines = atom.lines if atom.lines is not None else chunk.whole_lines(atom.start, atom.end)
            if lines is not None:
                atom.tokens = chunk.prefix[lines[1] + 1] - chunk.prefix[lines[0]]
            else:
                pending.append(atom)
        counts = self.counter.count_pieces([chunk.text[a.start:a.end] for a in pending])
        for atom, tokens in zip(pending, counts):
            atom.tokens = tokens

    # --------------------------------------------------------------------- atoms
    @staticmethod
    def _line_atoms(chunk: ChunkText, start: int, end: int, header: str | None = None,
                    header_start: int = -1, skip: bytearray | None = None) -> list[Atom]:
        """A line atom for every non-blank line (or part of one) in [start, end), but for
        the lines flagged in `skip`."""
        atoms = []
        offsets, ends, lines, text = chunk.offsets, chunk.ends, chunk.lines, chunk.text
        for index in range(chunk.line_at(start), chunk.line_at(max(end - 1, start)) + 1):
            if skip is not None and skip[index]:
                continue
            s, e = offsets[index], ends[index]
            if s >= start and e <= end:
                if lines[index].strip():
                    atoms.append(Atom(s, e, "line", header=header, header_start=header_start,
                                      lines=(index, index)))
            else:
                s, e = max(s, start), min(e, end)
                if text[s:e].strip():
                    atoms.append(Atom(s, e, "line", header=header, header_start=header_start))
        return atoms

    def _with_uncovered_lines(self, chunk: ChunkText, atoms: list[Atom], start: int, end: int) -> list[Atom]:
        """Adds a line atom for every non-blank line in [start, end) that no atom covers."""
        covered = bytearray(len(chunk.lines))
        for atom in atoms:
            first, last = atom.lines or (chunk.line_at(atom.start), chunk.line_at(max(atom.end - 1, atom.start)))
            covered[first:last + 1] = b"\x01" * (last + 1 - first)
        extra = self._line_atoms(chunk, start, end, skip=covered)
        return sorted(atoms + extra, key=lambda a: a.start)

    def _refine(self, chunk: ChunkText, atom: Atom, first_line: int) -> list[Atom]:
        """Cut one too-long atom at the next-best boundary."""
        block = atom.block
        if atom.kind == "block" and block is not None:
            if block.kind in ("bullet_list", "ordered_list") and len(block.items) > 1:
                items = [Atom(chunk.offsets[a - first_line], chunk.ends[b - first_line], "item",
                              lines=chunk.line_span(a - first_line, b - first_line))
                         for a, b in block.items]
                return self._with_uncovered_lines(chunk, items, atom.start, atom.end)
            if block.kind == "table" and block.end - block.start >= 2:
                head_line = block.start - first_line
                head_end = chunk.ends[head_line + 1]
                header = chunk.text[atom.start:head_end]
                head = Atom(atom.start, head_end, "table", lines=chunk.line_span(head_line, head_line + 1))
                return [head, *self._line_atoms(chunk, head_end + 1, atom.end, header, atom.start)]
        if "\n" in chunk.text[atom.start:atom.end]:
            return self._line_atoms(chunk, atom.start, atom.end, atom.header, atom.header_start)
        segment = chunk.text[atom.start:atom.end]
        if atom.kind not in ("sentence", "word", "piece"):
            cuts = [m.end() for m in _SENTENCE_END.finditer(segment)]
            if cuts:
                return self._spans(atom, [0, *cuts], segment, "sentence")
        if atom.kind not in ("word", "piece"):
            cuts = [m.end() for m in _WORD_GAP.finditer(segment) if m.end() < len(segment)]
            if cuts:
                return self._spans(atom, [0, *cuts], segment, "word")
        # One "word" longer than a part (a giant URL, a base64 blob): cut between its tokens.
        offsets = self.counter.offsets(segment)
        step = max(1, min(16, atom.tokens // 2))
        cuts = [offsets[i][0] for i in range(step, len(offsets), step)]
        return self._spans(atom, [0, *cuts], segment, "piece")

    @staticmethod
    def _spans(atom: Atom, cuts: list[int], segment: str, kind: str) -> list[Atom]:
        atoms = []
        for index, cut in enumerate(cuts):
            stop = cuts[index + 1] if index + 1 < len(cuts) else len(segment)
            piece = segment[cut:stop].rstrip()
            if piece:
                atoms.append(Atom(atom.start + cut, atom.start + cut + len(piece), kind,
                                  header=atom.header, header_start=atom.header_start))
        return atoms

    def _fit(self, chunk: ChunkText, atoms: list[Atom], budget: int, first_line: int) -> list[Atom]:
        self._count(chunk, atoms)
        headers = {a.header for a in atoms if a.header}
        header_tokens = dict(zip(headers, self.counter.count_pieces(list(headers))))
        fitted: list[Atom] = []
        for atom in atoms:
            extra = header_tokens.get(atom.header, 0) if atom.header else 0
            if extra > budget // 3:
                atom.header, extra = None, 0  # a header that big would crowd out the rows
            room = max(budget - extra - self.overlap_tokens, 1)
            if atom.tokens <= room or atom.end - atom.start <= 1:
                fitted.append(atom)
            else:
                fitted.extend(self._fit(chunk, self._refine(chunk, atom, first_line), budget, first_line))
        return fitted

    # ------------------------------------------------------------------- packing
    def _overlap(self, chunk: ChunkText, part: Part) -> tuple[int, int] | None:
        """(start, tokens) of the overlap copied from the end of `part`, or None."""
        if self.overlap_tokens <= 0:
            return None
        limit = min(self.overlap_tokens, part.tokens // 3)
        last = chunk.line_at(max(part.end - 1, part.own_start))
        first = chunk.line_at(part.own_start)
        tokens, start = 0, None
        for index in range(last, first, -1):  # whole trailing lines first: rows, list items
            line_tokens = chunk.prefix[index + 1] - chunk.prefix[index]
            if chunk.ends[index] > part.end or tokens + line_tokens > limit:
                break
            tokens += line_tokens
            if line_tokens:
                start = chunk.offsets[index]
        if start is not None:
            return start, tokens
        # The last line is long: take its trailing words, about `limit` tokens of them.
        line_start = max(chunk.offsets[last], part.own_start)
        segment = chunk.text[line_start:part.end]
        words = self.counter.word_tokens(segment)
        take = min(limit, sum(tokens for _, tokens in words) // 3)
        if take <= 0:
            return None
        tokens, begin = 0, None
        for start, word_tokens in reversed(words):
            tokens += word_tokens
            begin = start
            if tokens >= take:
                break
        if not begin or not segment[begin - 1].isspace():
            return None  # the tail would be the whole line, or half a word
        return line_start + begin, tokens

    def split(self, text: str, line_tokens: list[int], blocks: list[Block], first_line: int,
              budget: int) -> list[Part]:
        """Cut `text` (lines `first_line`… of the file) into parts of at most `budget` tokens."""
        return self.split_chunk(ChunkText(text, line_tokens), blocks, first_line, budget)

    def split_chunk(self, chunk: ChunkText, blocks: list[Block], first_line: int, budget: int) -> list[Part]:
        """`split` for a text already measured into lines."""
        text = chunk.text
        line_count = len(chunk.lines)
        atoms: list[Atom] = []
        for block in blocks:
            first = max(block.start - first_line, 0)
            last = min(block.end - first_line, line_count - 1)
            if first > last:
                continue
            items = [(max(a, first + first_line), min(b, last + first_line)) for a, b in block.items
                     if a <= last + first_line and b >= first + first_line]
            clipped = Block(block.kind, first + first_line, last + first_line, items)
            atoms.append(Atom(chunk.offsets[first], chunk.ends[last], "block", clipped,
                              lines=chunk.line_span(first, last)))
        atoms = self._with_uncovered_lines(chunk, atoms, 0, len(text))  # lines no block claims
        atoms = self._fit(chunk, atoms, budget, first_line)

        parts: list[Part] = []
        header_cache: dict[str, int] = {}
        index = 0
        while index < len(atoms):
            first_atom = atoms[index]
            start, overlap_tokens = first_atom.start, 0
            if parts:
                overlap = self._overlap(chunk, parts[-1])
                if overlap is not None:
                    start, overlap_tokens = overlap
            header = first_atom.header if first_atom.header and first_atom.header_start < start else None
            header_tokens = header_cache.setdefault(header, self.counter.count_pieces([header])[0]) if header else 0
            used = overlap_tokens + header_tokens
            if overlap_tokens and used + first_atom.tokens > budget:
                start, overlap_tokens = first_atom.start, 0  # no room for an overlap this time
                header = first_atom.header if first_atom.header and first_atom.header_start < start else None
                header_tokens = header_cache.get(header, 0) if header else 0
                used = header_tokens
            stop = index
            while stop < len(atoms) and (stop == index or used + atoms[stop].tokens <= budget):
                used += atoms[stop].tokens
                stop += 1
            end = atoms[stop - 1].end
            body = text[start:end]
            approximate = any(a.kind == "piece" for a in atoms[index:stop])
            parts.append(Part((header + "\n" + body) if header else body, start, first_atom.start, end,
                              used, approximate or (overlap_tokens > 0 and start > 0 and not text[start - 1].isspace())))
            index = stop
        return parts
