"""What is open while a document is read line by line, and the line-aligned reading it gives."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable


@dataclass
class _Container:
    kind: str  # "indent" (MkDocs admonition or tab: the body is indented) | "colon" | "hugo" | "jsx"
    indent: int = 0  # for "indent": the body's indentation
    name: str = ""


@dataclass
class ReadState:
    """What is open before a line: enough to read a part that starts there."""

    containers: tuple = ()
    fence: str | None = None  # the fence marker while inside a code fence
    fence_name: str = ""  # the shortcode whose body reads as code, while fence is "{{<"
    item_indent: int = 0  # where the content of the list item the lines are in starts (0: none known)
    fence_item: int = 0  # item_indent of the list item that holds the open code fence: a line indented less ends it
    markdown_tabs: bool = False  # a Hugo tab pane whose tabs hold Markdown, not code (Docsy's `text=true`), is open
    pane_language: str = ""  # the code language of the open Hugo tab pane (Docsy's `lang`): its tabs' unless they name one
    mdx_fences: tuple = ()  # the markers of the Docusaurus `mdx-code-block` fences open (read as MDX), outermost first
    skip: str | None = None  # "props" (MDC YAML props), "import", "export", "snippets", "jsx", "comment",
    # "html_comment", "hugo" (a shortcode over several lines), "hugo_inline" (the same in a paragraph),
    # "hugo_comment", "html_tag" (an HTML opening tag over several lines; `jsx` holds its name)
    depth: int = 0  # brace depth of an `export` block
    pending_title: int | None = None  # a reading line waiting for an MDC callout's bold title
    jsx: str = ""  # a multi-line JSX opening tag (or Hugo shortcode) read so far
    opened: bool = False  # the line before opened an MDC component (YAML props may follow)
    # MDX components imported from Markdown files (`import Steps from './_steps.md'`): name -> path.
    # Replaced, never changed in place: the states kept for each line share it.
    imports: dict = field(default_factory=dict)


@dataclass
class Reading:
    lines: list  # one entry per source line: its reading, or None where the line disappears
    states: list = field(default_factory=list)  # ReadState before each line

    def text(self, start: int, end: int) -> str:
        return join_reading(self.lines[start:end])


def join_reading(lines: Iterable[str | None]) -> str:
    """The reading lines of a span as text: vanished lines dropped, runs of blank lines made one,
    blank lines at both ends dropped."""
    out: list[str] = []
    for line in lines:
        if line is None:
            continue
        if not line.strip() and (not out or not out[-1].strip()):
            continue
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


def _expand(line: str) -> str:
    return line.expandtabs(4) if "\t" in line else line


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))
