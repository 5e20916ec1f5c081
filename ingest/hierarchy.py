"""The hierarchical pass: the heading tree → whole-thought chunks.

Rules, in order:
- Lines before the first heading (after any front matter) are a `note`: intros, preambles.
  A file without headings is one note.
- Every heading owns the lines up to the next heading of any level (its own body).
- A heading whose whole subtree fits `merge_max_tokens` and has at least one short child
  (subtree at most `merge_child_max_tokens`) becomes one `merged` chunk: a parent with its
  short children folded in reads better than a string of tiny fragments.
- Otherwise the heading's own body is a `section` (no parent heading) or a `subsection`
  (it knows its parent through `heading_path`), and each child is handled the same way.
- A heading with no body of its own (a title straight above its first sub-heading) is not
  left alone as a bare line: it opens its first child's chunk instead.
Every chunk is one contiguous range of source lines, so nothing is lost or repeated.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ingest.markdown import Heading, ParsedDocument


@dataclass
class HNode:
    heading: Heading
    end: int  # exclusive: first line after the whole subtree
    own_end: int  # exclusive: first line of the first child (or `end`)
    path: list[str]
    parent: HNode | None = None
    children: list[HNode] = field(default_factory=list)
    own_tokens: int = 0
    subtree_tokens: int = 0


@dataclass
class HierarchicalChunk:
    chunk_type: str  # section | subsection | merged | note
    heading_path: list[str]
    start: int  # first line, 0-based, inclusive
    end: int  # exclusive
    # The first line of the heading the chunk is named by, and of that heading's parent heading
    # (None for a note, and for a top heading's parent): which chunk holds a parent's own text
    # is known here, where the tree is, and nowhere after.
    heading_line: int | None = None
    parent_heading_line: int | None = None


def build_tree(doc: ParsedDocument) -> list[HNode]:
    """Headings → a forest; a heading's parent is the nearest earlier heading of a lower level."""
    total = len(doc.lines)
    roots: list[HNode] = []
    stack: list[HNode] = []
    nodes: list[HNode] = []
    for heading in doc.headings:
        while stack and stack[-1].heading.level >= heading.level:
            stack.pop()
        parent = stack[-1] if stack else None
        node = HNode(heading, total, total, (parent.path if parent else []) + [heading.title], parent)
        (parent.children if parent else roots).append(node)
        stack.append(node)
        nodes.append(node)
    # A node's own body ends where the next heading starts; its subtree ends at the next
    # heading that is not inside it.
    for index, node in enumerate(nodes):
        if index + 1 < len(nodes):
            node.own_end = nodes[index + 1].heading.start
        later = next((n for n in nodes[index + 1:] if n.heading.level <= node.heading.level), None)
        node.end = later.heading.start if later else total
    return roots


def _all_nodes(roots: list[HNode]):
    for node in roots:
        yield node
        yield from _all_nodes(node.children)


def _is_blank(lines: list[str], start: int, end: int) -> bool:
    return all(not line.strip() for line in lines[start:end])


def _lines(node: HNode) -> tuple[int, int | None]:
    """(heading line, parent heading line) of the chunk named by `node`."""
    return node.heading.start, node.parent.heading.start if node.parent else None


def hierarchical_chunks(doc: ParsedDocument, token_prefix: list[int], merge_max_tokens: int,
                        merge_child_max_tokens: int) -> list[HierarchicalChunk]:
    """`token_prefix[i]` is the number of tokens in lines [0, i) of the file."""
    lines = doc.lines
    roots = build_tree(doc)
    nodes = list(_all_nodes(roots))
    for node in nodes:
        node.own_tokens = token_prefix[node.own_end] - token_prefix[node.heading.start]
    for node in reversed(nodes):  # children come after their parent: sum bottom-up
        node.subtree_tokens = node.own_tokens + sum(child.subtree_tokens for child in node.children)

    chunks: list[HierarchicalChunk] = []
    first_heading = doc.headings[0].start if doc.headings else len(lines)
    if not _is_blank(lines, doc.body_start, first_heading):
        chunks.append(HierarchicalChunk("note", [], doc.body_start, first_heading))

    def emit(node: HNode, carry_start: int | None) -> None:
        start = node.heading.start if carry_start is None else carry_start
        short_child = any(child.subtree_tokens <= merge_child_max_tokens for child in node.children)
        if node.children and short_child and node.subtree_tokens <= merge_max_tokens:
            chunks.append(HierarchicalChunk("merged", node.path, start, node.end, *_lines(node)))
            return
        kind = "section" if node.parent is None else "subsection"
        body_blank = _is_blank(lines, node.heading.end + 1, node.own_end)
        if node.children and body_blank:
            emit(node.children[0], start)  # a bare title opens its first child's chunk
        else:
            chunks.append(HierarchicalChunk(kind, node.path, start, node.own_end, *_lines(node)))
            if node.children:
                emit(node.children[0], None)
        for child in node.children[1:]:
            emit(child, None)

    for root in roots:
        emit(root, None)
    return chunks
