"""Markdown source → a parsed document: lines, front matter, headings and top-level blocks.

The CommonMark parser (markdown-it, Rust implementation) decides what is a heading, a code
fence, a table or a list, so a `#` line inside a fence or indented code is never a heading.
Only its block rules are on: CommonMark settles the block structure before any inline
syntax (emphasis, links, code spans) is looked at, and nothing here reads inline nodes.
Everything here is expressed in 0-based line numbers of the *original file*, so chunks can
point back at their source lines exactly.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate

from markdown_it_pyrs import MarkdownIt

from fieldguide.headings import split_heading_id

_BLOCK_RULES = ["blockquote", "code", "fence", "heading", "hr", "lheading", "list", "paragraph", "reference",
                "html_block", "table"]
_PARSER = MarkdownIt("zero").enable_many(_BLOCK_RULES)

# Admonition openers, Docusaurus (`:::note`) and Python-Markdown/MkDocs (`!!! note`).
_ADMONITION_BANG = "!!!"
_BLANK_BYTES = b"\n \t"
_MDC_OPENER = re.compile(r"(:{2,})[ ]?[A-Za-z]")

# Front matter made only of `key: value` lines, each value a quoted string without escapes,
# a whole number or plain words, is read here just as YAML reads it; anything else goes to
# the YAML parser, whose import costs about as much as chunking a dozen small files.
_SIMPLE_ENTRY = re.compile(
    r"(?P<key>[A-Za-z_][A-Za-z0-9_-]*):"
    r"(?:[ ]+(?:'(?P<single>[ -&(-~]*)'|\"(?P<double>[ !#-\[\]-~]*)\"|(?P<number>0|[1-9][0-9]*)"
    r"|(?P<plain>[A-Za-z/][A-Za-z0-9 _./()&+,'!?-]*?)))?[ ]*")
# Plain words YAML reads as booleans or null rather than strings.
_YAML_WORDS = frozenset(
    variant for word in ("yes", "no", "true", "false", "on", "off", "null")
    for variant in (word, word.capitalize(), word.upper()))


@dataclass
class Block:
    """A top-level Markdown block: `kind` is the parser's node name (paragraph, table, ...)."""

    kind: str
    start: int  # first line (0-based, file coordinates)
    end: int  # last line, inclusive
    items: list[tuple[int, int]] = field(default_factory=list)  # list items: (first, last) lines


@dataclass
class Heading:
    level: int
    title: str  # as written, without markers; an explicit `{#id}` stays (`fieldguide.headings`)
    start: int  # heading line (first line of a setext heading)
    end: int  # last line of the heading itself (setext underline)
    anchor: str | None = None


@dataclass
class ParsedDocument:
    lines: list[str]  # the whole file, newline-free, CRLF/BOM normalised
    body_start: int  # first line after the front matter
    front_matter: dict
    headings: list[Heading]
    blocks: list[Block]
    warnings: list[str]

    @cached_property
    def block_starts(self) -> list[int]:
        return [b.start for b in self.blocks]

    @cached_property
    def block_ends(self) -> list[int]:  # blocks are in order and disjoint, so these are sorted too
        return [b.end for b in self.blocks]

    @property
    def title(self) -> str | None:
        value = self.front_matter.get("title")
        return str(value).strip() if value not in (None, "") else None


def decode_markdown(raw: bytes, source: str) -> tuple[str, list[str]]:
    """Bytes → text: UTF-8 (BOM dropped); other bytes are replaced, with a warning, never a crash."""
    warnings: list[str] = []
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        warnings.append(f"{source}: not valid UTF-8 (first bad byte at offset {exc.start}); "
                        "undecodable bytes were replaced with U+FFFD")
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
        warnings.append(f"{source}: NUL bytes replaced with U+FFFD")
    # CRLF and lone CR both end a line; normalising keeps line numbers true to the file.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, warnings


def _split_front_matter(lines: list[str], source: str, warnings: list[str]) -> tuple[dict, int]:
    """(front matter, first body line). Only a leading `---` block that YAML reads as a non-empty
    mapping is front matter. Any other leading `---` block (a thematic break or a setext
    underline under CommonMark, e.g. `---` / `Foo` / `---`) stays in the body as content.
    Hugo's TOML front matter (`+++` … `+++`) is read the same way."""
    if lines and lines[0].rstrip() == "+++":
        return _toml_front_matter(lines, source, warnings)
    if not lines or lines[0].rstrip() != "---":
        return {}, 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            data = _simple_front_matter(lines[1:index])
            if data is None:
                import yaml  # only files with front matter beyond the simple kind pay for it

                try:
                    data = yaml.safe_load("\n".join(lines[1:index]))
                except yaml.YAMLError as exc:
                    warnings.append(f"{source}: the leading --- block is not valid YAML "
                                    f"({exc.__class__.__name__}); its lines are kept as content")
                    return {}, 0
            if not isinstance(data, dict) or not data:
                return {}, 0  # not front matter: CommonMark content (thematic breaks, headings)
            return data, index + 1
    return {}, 0  # an opening `---` with no closing line is a thematic break, not front matter


def _toml_front_matter(lines: list[str], source: str, warnings: list[str]) -> tuple[dict, int]:
    """A leading `+++` block that TOML reads as a non-empty table is front matter; anything else
    (a line of plus signs in prose) stays in the body."""
    for index in range(1, len(lines)):
        if lines[index].rstrip() == "+++":
            import tomllib

            try:
                data = tomllib.loads("\n".join(lines[1:index]))
            except tomllib.TOMLDecodeError as exc:
                warnings.append(f"{source}: the leading +++ block is not valid TOML ({exc}); its lines are kept as content")
                return {}, 0
            return (data, index + 1) if data else ({}, 0)
    return {}, 0


def _simple_front_matter(lines: list[str]) -> dict | None:
    """What YAML makes of `lines` when they are simple `key: value` lines, else None."""
    data: dict = {}
    for line in lines:
        if not line.strip(" "):
            continue
        entry = _SIMPLE_ENTRY.fullmatch(line)
        if entry is None or entry["key"] in _YAML_WORDS or entry["plain"] in _YAML_WORDS:
            return None
        single, double, number, plain = entry.group("single", "double", "number", "plain")
        value = int(number) if number is not None else next(
            (text for text in (single, double, plain) if text is not None), None)
        data[entry["key"]] = value
    return data


def _heading_title(source_lines: list[str], setext: bool) -> tuple[str, str | None]:
    if setext:
        title = " ".join(line.strip() for line in source_lines[:-1])
    else:
        line = source_lines[0].strip().lstrip("#")
        # a closing sequence of #s is only a closer when preceded by a space (CommonMark)
        stripped = line.rstrip()
        without_closer = stripped.rstrip("#")
        if without_closer != stripped and (without_closer == "" or without_closer.endswith((" ", "\t"))):
            stripped = without_closer
        title = stripped.strip()
    return title, split_heading_id(title)[1]


def parse_markdown(text: str, source: str = "", warnings: list[str] | None = None) -> ParsedDocument:
    warnings = list(warnings or [])
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line does not open another one
    front_matter, body_start = _split_front_matter(lines, source, warnings)
    body = "\n".join(lines[body_start:])
    encoded = body.encode("utf-8")
    # byte offset of every body line start, to map the parser's byte spans to lines
    if len(encoded) == len(body):  # ASCII: as many bytes as characters
        line_bytes = [len(line) + 1 for line in lines[body_start:]]
    else:
        line_bytes = [len(line) + 1 if line.isascii() else len(line.encode("utf-8")) + 1
                      for line in lines[body_start:]]
    starts = list(accumulate(line_bytes, initial=0))

    size = len(encoded)
    line_after = bisect.bisect_right  # line of a byte offset: body_start + line_after(starts, offset) - 1

    def span_lines(begin: int, finish: int) -> tuple[int, int]:
        """First and last line of a parser span; a span can end on blank bytes: step back onto text."""
        last = finish - 1
        if begin < last < size:
            last = begin + max(len(encoded[begin:finish].rstrip(_BLANK_BYTES)) - 1, 0)
        return body_start + line_after(starts, begin) - 1, body_start + line_after(starts, last) - 1

    headings: list[Heading] = []
    blocks: list[Block] = []
    if body.strip():
        tree = _PARSER.tree(body)
        for node in tree.children:
            if node.srcmap is None:
                continue
            begin, finish = node.srcmap
            if finish <= begin:
                continue
            first_line, last_line = span_lines(begin, finish)
            if node.name in ("heading", "lheading"):
                setext = node.name == "lheading"
                title, anchor = _heading_title(lines[first_line:last_line + 1], setext)
                headings.append(Heading(int(node.meta.get("level", 1)), title, first_line, last_line, anchor))
            block = Block(node.name, first_line, last_line)
            if node.name in ("bullet_list", "ordered_list"):
                for item in node.children:
                    if item.srcmap:
                        block.items.append(span_lines(*item.srcmap))
            blocks.append(block)
    blocks = _group_admonitions(blocks, lines)
    return ParsedDocument(lines, body_start, front_matter, headings, blocks, warnings)


def _group_admonitions(blocks: list[Block], lines: list[str]) -> list[Block]:
    """Fold the blocks of one admonition into a single block, so splitting never cuts inside it.

    CommonMark has no admonitions: `:::note … :::` arrives as paragraphs (and whatever is
    inside), `!!! note` as a paragraph followed by indented code. Headings are never folded.
    """
    grouped: list[Block] = []
    index = 0
    while index < len(blocks):
        block = blocks[index]
        opener = lines[block.start].lstrip()
        colons = _MDC_OPENER.match(opener)  # `:::note` (Docusaurus), `::callout{…}` (MDC): closed by as many colons
        if block.kind == "paragraph" and colons:
            fence = colons.group(1)
            last = index
            closed = lines[block.end].strip() == fence and block.end > block.start
            while not closed and last + 1 < len(blocks) and blocks[last + 1].kind not in ("heading", "lheading"):
                last += 1
                closed = lines[blocks[last].end].strip() == fence
            if closed:
                grouped.append(Block("admonition", block.start, blocks[last].end))
                index = last + 1
                continue
        if block.kind == "paragraph" and opener.startswith(_ADMONITION_BANG):
            last = index
            while last + 1 < len(blocks) and blocks[last + 1].kind == "code_block":
                last += 1
            grouped.append(Block("admonition", block.start, blocks[last].end))
            index = last + 1
            continue
        grouped.append(block)
        index += 1
    return grouped
