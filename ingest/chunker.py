"""Markdown file → chunks: parse, hierarchical pass, token-safe pass, metadata.

Small passes, each in its own module: `markdown` (decode, front matter, parse),
`hierarchy` (heading tree → whole-thought chunks), `split` (parts that fit the embedding
model), `kind` (screen or prose). The embedded text (breadcrumb + text + part label) is
kept apart from the stored text, which is the Markdown as written.
"""
from __future__ import annotations

import bisect
import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from fieldguide.headings import heading_labels
from ingest.chunk import Chunk, make_group_id, make_part_id
from ingest.dialects import Dialect, Reading, read_fragment, read_inline, read_lines
from ingest.hierarchy import HierarchicalChunk, hierarchical_chunks
from ingest.kind import decide_content_kind
from ingest.markdown import ParsedDocument, decode_markdown, parse_markdown
from ingest.settings import ChunkingSettings
from ingest.split import ChunkText, Splitter
from ingest.tokens import get_counter

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
BREADCRUMB_SEPARATOR = " > "
# Room kept for the part label ("(part 12 of 15)") when budgeting a part's text.
PART_LABEL_RESERVE = 10
# The breadcrumb never takes more than this share of a chunk's token limit, so the text keeps
# the rest: a paragraph underlined by `---` or `===` is a whole setext heading under CommonMark,
# and as a breadcrumb it would crowd the text out of every part.
BREADCRUMB_SHARE = 0.3
# A heading longer than this many tokens is cut at a word (marked "…") wherever it names a chunk:
# in `heading_path` and in the breadcrumb. Its full text stays in the chunk's own text.
MAX_HEADING_TOKENS = 48
ELLIPSIS = "…"

_MD_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)")
_HTML_IMAGE = re.compile(r"<img\b[^>]*?\bsrc\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)


@dataclass
class ChunkedFile:
    source: str
    sha256: str
    chunks: list[Chunk] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def file_sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def iter_markdown_files(docs_dir: Path) -> list[Path]:
    docs_dir = Path(docs_dir)
    return sorted(p for p in docs_dir.rglob("*")
                  if p.suffix.lower() in MARKDOWN_SUFFIXES and p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(docs_dir).parts))


def find_images(text: str) -> list[str]:
    if "![" not in text and "<" not in text:  # neither kind of image can be there
        return []
    found = [(m.start(), m.group(1)) for m in _MD_IMAGE.finditer(text)]
    found += [(m.start(), m.group(1)) for m in _HTML_IMAGE.finditer(text)]
    seen: dict[str, None] = {}
    for _, url in sorted(found):
        seen.setdefault(url, None)
    return list(seen)


def part_label(index: int, count: int) -> str:
    return f"(part {index} of {count})"


class Chunker:
    def __init__(self, settings=None, counter=None, token_pass: bool = True, label: str | None = None,
                 dialect: Dialect | None = None):
        """`token_pass=False` keeps over-long chunks whole (the embedding model then truncates
        them silently): only for measuring what the token-safe pass buys. `label`: the doc set
        the files belong to (`make_group_id`); None for the unnamed set. `dialect`: the docs
        folder's (`ingest.dialects.folder_dialect`); None reads every dialect's constructs."""
        self.label = label or None
        self.dialect = dialect if dialect is not None else Dialect()
        if settings is None:  # the chunking subset only: no pydantic to import
            settings = ChunkingSettings.from_environment()
        self.settings = settings
        self.counter = counter or get_counter(settings.embedding_model)
        self.max_tokens = self.counter.max_tokens
        self.limit = int(self.max_tokens * settings.token_limit_fraction)
        self.splitter = Splitter(self.counter, settings.overlap_tokens)
        self.token_pass = token_pass

    # ------------------------------------------------------------------ files
    def chunk_path(self, path: Path, docs_dir: Path) -> ChunkedFile:
        source = Path(path).relative_to(docs_dir).as_posix()
        return self.chunk_bytes(Path(path).read_bytes(), source)

    def chunk_bytes(self, raw: bytes, source: str) -> ChunkedFile:
        return self.chunk_many([(raw, source)])[0]

    def chunk_many(self, files: list[tuple[bytes, str]]) -> list[ChunkedFile]:
        """Chunks several files at once: their lines are tokenized in one parallel batch."""
        docs, readings = [], []
        for raw, source in files:
            text, warnings = decode_markdown(raw, source)
            doc = parse_markdown(text, source, warnings)
            docs.append(doc)
            readings.append(read_lines(doc.lines, self.dialect, source, doc.body_start, keep_states=True))
        filled = [(d, i) for d, doc in enumerate(docs)
                  for i in range(doc.body_start, len(doc.lines)) if doc.lines[i].strip()]
        # a line read otherwise (a construct of the dialect) counts as the longer of its two
        # forms, so budgets made of line counts hold for the text and for its reading alike
        changed = [(d, i) for d, reading in enumerate(readings) for i in range(docs[d].body_start, len(docs[d].lines))
                   if reading.lines[i] is not None and reading.lines[i] != docs[d].lines[i]]
        counts = self.counter.count_pieces([docs[d].lines[i] for d, i in filled]
                                           + [readings[d].lines[i] for d, i in changed])
        line_tokens = [[0] * len(doc.lines) for doc in docs]
        for (d, i), tokens in zip(filled, counts):
            line_tokens[d][i] = tokens
        raw_tokens = [list(tokens) for tokens in line_tokens] if changed else line_tokens
        for (d, i), tokens in zip(changed, counts[len(filled):]):
            line_tokens[d][i] = max(line_tokens[d][i], tokens)
        return [ChunkedFile(source, file_sha256(raw), self.chunk_document(doc, source, tokens, reading, own),
                            doc.warnings)
                for (raw, source), doc, tokens, reading, own in zip(files, docs, line_tokens, readings, raw_tokens)]

    def chunk_text(self, text: str, source: str = "doc.md") -> list[Chunk]:
        return self.chunk_bytes(text.encode("utf-8"), source).chunks

    # --------------------------------------------------------------- document
    def chunk_document(self, doc: ParsedDocument, source: str, line_tokens: list[int],
                       reading: Reading | None = None, raw_tokens: list[int] | None = None) -> list[Chunk]:
        """`line_tokens[i]`: tokens of line i. Every line is tokenized once; spans of whole
        lines are sums of their lines' counts (see split.py). `reading`: the document as the
        site renders it (`ingest.dialects`); what is embedded and what decides the kind.
        `raw_tokens`: the lines' own counts where `line_tokens` holds a longer reading's; the
        splitter cuts the text as written by them (a part's reading is counted exactly after)."""
        raw_tokens = raw_tokens if raw_tokens is not None else line_tokens
        settings = self.settings
        if reading is None:
            reading = read_lines(doc.lines, self.dialect, source, doc.body_start, keep_states=True)
        read_otherwise = [i for i, line in enumerate(reading.lines) if line != doc.lines[i]]
        if read_otherwise:
            # A "heading" made of lines the page does not show is none: CommonMark reads an MDC
            # component's opener above its YAML props (`::card{…}` / `---`) as a setext heading.
            # Nor is a "# comment" in a shortcode's body that the site shows as code (a Hugo code tab).
            shown = [h for h in doc.headings if all(reading.lines[i] is not None for i in range(h.start, h.end + 1))
                     and not (reading.states and reading.states[h.start].fence == "{{<")]
            if len(shown) != len(doc.headings):
                doc = replace(doc, headings=shown)
        prefix = [0]
        for tokens in line_tokens:
            prefix.append(prefix[-1] + tokens)

        pieces = hierarchical_chunks(doc, prefix, settings.merge_max_tokens, settings.merge_child_max_tokens)
        pieces = [p for p in (_trim(doc, p) for p in pieces) if p is not None]
        if read_otherwise:
            pieces = _fold_unseen(pieces, reading)
        has_h1 = any(h.level == 1 for h in doc.headings)
        doc_title = doc.title if not has_h1 else None
        if doc_title:
            doc_title = self._short_heading(doc_title)
        for piece in pieces:
            piece.heading_path = [self._short_heading(title) for title in piece.heading_path]
        # a heading the page shows nothing of (a comment macro) leaves no empty crumb behind
        crumb_lists = [([doc_title] if doc_title else [])
                       + [crumb for crumb in (read_inline(label, self.dialect) for label in heading_labels(p.heading_path))
                          if crumb.strip()] for p in pieces]
        breadcrumbs = [BREADCRUMB_SEPARATOR.join(c) or source for c in crumb_lists]
        unique = sorted(set(breadcrumbs))
        breadcrumb_tokens = dict(zip(unique, self.counter.count_pieces(unique)))
        room = int(self.limit * BREADCRUMB_SHARE)
        for breadcrumb in [b for b in unique if breadcrumb_tokens[b] > room]:
            fitted = self._fitting_breadcrumb(breadcrumb, room)
            breadcrumb_tokens[fitted] = self.counter.count_piece(fitted)
            breadcrumbs = [fitted if b == breadcrumb else b for b in breadcrumbs]
        chunks: list[Chunk] = []
        for piece, breadcrumb, (group_id, parent_group_id) in zip(pieces, breadcrumbs, self._group_ids(pieces, source)):
            text = "\n".join(doc.lines[piece.start:piece.end])
            dialectal = _any_between(read_otherwise, piece.start, piece.end)
            read = reading.text(piece.start, piece.end) if dialectal else text
            tokens = (self.counter.special_tokens + breadcrumb_tokens[breadcrumb]
                      + prefix[piece.end] - prefix[piece.start])
            kind, reason = decide_content_kind(read, piece.heading_path, doc.front_matter)
            common = dict(group_id=group_id, parent_group_id=parent_group_id, chunk_type=piece.chunk_type,
                          content_kind=kind, source=source,
                          heading_path=list(piece.heading_path), content_kind_reason=reason,
                          page_title=doc_title or "")
            if tokens <= self.limit or not self.token_pass:
                embed_text = f"{breadcrumb}\n\n{read}"
                if dialectal:  # the line sums bound it from above: the exact count of what is embedded
                    tokens = self.counter.special_tokens + self.counter.count_piece(embed_text)
                chunks.append(Chunk(chunk_id=group_id, part_index=1, part_count=1, line_start=piece.start + 1,
                                    line_end=piece.end, text=text, embed_text=embed_text, reading=read,
                                    token_count=tokens, images=find_images(text), **common))
            else:
                chunks.extend(self._split(doc, piece, text, raw_tokens[piece.start:piece.end], breadcrumb, common,
                                          # a part that starts inside a code block reads with its
                                          # fence opened again, constructs or not (`read_fragment`)
                                          reading if dialectal or self.dialect.families else None, source))
        return chunks

    def _group_ids(self, pieces: list[HierarchicalChunk], source: str) -> list[tuple[str, str]]:
        """(group id, parent group id) of each piece. The parent group is the chunk that holds the
        parent heading's own text (its intro); "" for a top section, a note, and a child whose
        parent has no text of its own (a bare title opens its first child's chunk)."""
        occurrences: dict[tuple, int] = {}
        group_ids = []
        for piece in pieces:
            key = (piece.chunk_type == "note", *piece.heading_path)
            occurrence = occurrences.get(key, 0)
            occurrences[key] = occurrence + 1
            group_ids.append(make_group_id(source, piece.heading_path, occurrence, self.label))
        by_heading = {piece.heading_line: group_id for piece, group_id in zip(pieces, group_ids)
                      if piece.heading_line is not None}
        return [(group_id, "" if piece.parent_heading_line is None else by_heading.get(piece.parent_heading_line, ""))
                for piece, group_id in zip(pieces, group_ids)]

    def _split(self, doc: ParsedDocument, piece: HierarchicalChunk, text: str, line_tokens: list[int],
               breadcrumb: str, common: dict, reading: Reading | None = None, source: str = "") -> list[Chunk]:
        """`reading`: the document's, when the piece holds constructs of the dialect: each part
        is then read from the state the document had at the part's first line."""
        # Top-level blocks are in order and do not overlap: the piece's blocks are one slice.
        first = bisect.bisect_left(doc.block_ends, piece.start)
        last = bisect.bisect_left(doc.block_starts, piece.end, lo=first)
        blocks = doc.blocks[first:last]
        fixed = self.counter.special_tokens + self.counter.count_piece(breadcrumb)
        budget = self.limit - fixed - PART_LABEL_RESERVE
        lines = ChunkText(text, line_tokens)
        for _ in range(8):  # shrink the budget until every part fits (rarely more than once)
            parts = self.splitter.split_chunk(lines, blocks, piece.start, budget)
            count = len(parts)
            labels = [part_label(i, count) for i in range(1, count + 1)]
            label_tokens = self.counter.count_pieces(labels)
            reads = [p.text if reading is None else read_fragment(
                p.text, self.dialect, source, reading.states[piece.start + lines.line_at(p.start)],
                partial_first=lines.offsets[lines.line_at(p.start)] != p.start) for p in parts]
            embed_texts = [f"{breadcrumb}\n\n{read}\n\n{label}" for read, label in zip(reads, labels)]
            counts = [fixed + p.tokens + n for p, n in zip(parts, label_tokens)]
            inexact = [i for i, (p, read) in enumerate(zip(parts, reads)) if p.approximate or read != p.text]
            for i, exact in zip(inexact, self.counter.count_many([embed_texts[i] for i in inexact])):
                counts[i] = exact
            overflow = max(counts) - self.limit
            if overflow <= 0:
                break
            budget -= max(overflow, 4)
        else:  # pragma: no cover - would mean the splitter cannot make progress
            raise RuntimeError(f"{common['source']}: cannot fit a part of {breadcrumb!r} under {self.limit} tokens")
        group_id = common["group_id"]
        chunks = []
        for index, (part, read, embed_text, tokens) in enumerate(zip(parts, reads, embed_texts, counts), 1):
            chunks.append(Chunk(
                chunk_id=make_part_id(group_id, index, count), part_index=index, part_count=count,
                line_start=piece.start + 1 + lines.line_at(part.start),
                line_end=piece.start + 1 + lines.line_at(max(part.end - 1, part.start)),
                text=part.text, embed_text=embed_text, reading=read, token_count=tokens,
                images=find_images(part.text), **common))
        return chunks

    def _short_heading(self, title: str) -> str:
        """`title`, or its first words and "…" when it is longer than MAX_HEADING_TOKENS tokens."""
        if len(title) <= MAX_HEADING_TOKENS or self.counter.count_piece(title) <= MAX_HEADING_TOKENS:
            return title  # a token is at least one character: short titles need no count
        return self._cut_to(title, MAX_HEADING_TOKENS)

    def _cut_to(self, text: str, max_tokens: int) -> str:
        """The longest run of leading words of `text` that fits `max_tokens` with "…" after it
        (leading characters when the first word alone is too long)."""
        def fits(candidate: str) -> bool:
            return self.counter.count_piece(f"{candidate} {ELLIPSIS}") <= max_tokens

        words = text.split()
        low, high = 0, len(words)  # words[:low] fits; words[:high + 1] would not
        while low < high:
            middle = (low + high + 1) // 2
            if fits(" ".join(words[:middle])):
                low = middle
            else:
                high = middle - 1
        if low:
            return f"{' '.join(words[:low])} {ELLIPSIS}"
        low, high = 1, len(words[0]) if words else 1
        while low < high:
            middle = (low + high + 1) // 2
            if fits(words[0][:middle]):
                low = middle
            else:
                high = middle - 1
        return f"{words[0][:low] if words else ''}{ELLIPSIS}"

    def _fitting_breadcrumb(self, breadcrumb: str, max_tokens: int) -> str:
        """A breadcrumb over `max_tokens` loses its top crumbs, then the words its last crumb
        cannot keep."""
        crumbs = breadcrumb.split(BREADCRUMB_SEPARATOR)
        while len(crumbs) > 1 and self.counter.count_piece(BREADCRUMB_SEPARATOR.join(crumbs)) > max_tokens:
            crumbs = crumbs[1:]
        if self.counter.count_piece(crumbs[0]) > max_tokens:
            crumbs = [self._cut_to(crumbs[0], max_tokens)]
        return BREADCRUMB_SEPARATOR.join(crumbs)


def _fold_unseen(pieces: list[HierarchicalChunk], reading: Reading) -> list[HierarchicalChunk]:
    """A piece the rendered page shows nothing of (MDX `import` lines before the first heading)
    joins the piece after it (else the one before): its lines stay in a chunk, and no chunk is
    embedded, retrieved and quoted for nothing."""
    folded: list[HierarchicalChunk] = []
    carry: int | None = None
    for index, piece in enumerate(pieces):
        start = piece.start if carry is None else carry
        if reading.text(piece.start, piece.end).strip():
            folded.append(replace(piece, start=start))
            carry = None
        elif index + 1 < len(pieces):
            carry = start
        elif folded:
            folded[-1] = replace(folded[-1], end=piece.end)
        else:
            folded.append(replace(piece, start=start))
    return folded


def _any_between(sorted_lines: list[int], start: int, end: int) -> bool:
    """Whether any of `sorted_lines` is in [start, end)."""
    index = bisect.bisect_left(sorted_lines, start)
    return index < len(sorted_lines) and sorted_lines[index] < end


def _trim(doc: ParsedDocument, piece: HierarchicalChunk) -> HierarchicalChunk | None:
    """Drop blank lines at both ends; a range with nothing left is not a chunk."""
    start, end = piece.start, piece.end
    while start < end and not doc.lines[start].strip():
        start += 1
    while end > start and not doc.lines[end - 1].strip():
        end -= 1
    if start >= end:
        return None
    return replace(piece, start=start, end=end)
