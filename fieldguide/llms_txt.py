"""`/llms.txt` and `/llms-full.txt`: the ingested docs as the llms.txt convention describes.

`llms.txt` is Markdown an agent reads first: an H1 title, a blockquote summary, then H2 sections
(one per top-level folder of the docs; files at the root under "Docs") of links, one per page:
`- [Title](url): one-line description`. `llms-full.txt` has the same title and summary followed
by every page's Markdown in full.

Both are made from the chunks in the index, not from files on disk: the service may run where
the docs folder is not, and what agents read is then exactly what fieldguide answers from. A
page's Markdown is its chunks in line order (split sections put back together, the overlap of
neighbouring parts trimmed); its title is its first heading (else its file name), its
description the first sentence of its text.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fieldguide.headings import heading_labels, rendered_text
from fieldguide.section_search import file_title, plain_text

DESCRIPTION_CHARS = 160
ROOT_SECTION = "Docs"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s.*$|^\s*(=+|-+)\s*$", re.MULTILINE)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")


@dataclass
class Page:
    source: str
    title: str
    description: str
    markdown: str
    label: str | None = None


def trim_overlap(previous: str, following: str, min_chars: int = 12) -> str:
    """`following` without the text it repeats from the end of `previous` (split parts overlap)."""
    probe = following[:min_chars]
    if len(probe) < min_chars:
        return following
    start = previous.find(probe, max(0, len(previous) - 4000))
    while start != -1:
        tail = previous[start:]
        if following.startswith(tail):
            return following[len(tail):].lstrip()
        start = previous.find(probe, start + 1)
    return following


def pages_from_chunks(chunks: Iterable[dict]) -> list[Page]:
    """One page per (label, source), in path order, from chunk records."""
    by_page: dict[tuple, list[dict]] = {}
    for chunk in chunks:
        by_page.setdefault((chunk.get("label") or None, chunk.get("source") or ""), []).append(chunk)
    pages = []
    for (label, source), parts in sorted(by_page.items(), key=lambda item: (item[0][0] or "", item[0][1])):
        parts.sort(key=lambda c: (int(c.get("line_start") or 0), int(c.get("part_index") or 1)))
        texts, previous = [], None
        for part in parts:
            text = part.get("text") or ""
            if previous is not None and previous.get("group_id") == part.get("group_id"):
                text = trim_overlap(previous.get("text") or "", text)
                texts[-1] = texts[-1].rstrip() + "\n" + text if text else texts[-1]
            else:
                texts.append(text)
            previous = part
        markdown = "\n\n".join(t.strip("\n") for t in texts if t.strip())
        headed = next((p for p in parts if p.get("heading_path")), None)
        title = rendered_text(heading_labels(headed["heading_path"])[0]) if headed else file_title(source)
        pages.append(Page(source, title, describe(markdown), markdown, label))
    return pages


def describe(markdown: str) -> str:
    """The first sentence of a page's text (headings and images left out), shortened at a word."""
    text = plain_text(_HEADING_LINE.sub(" ", _IMAGE.sub(" ", markdown)))
    sentence = _SENTENCE_END.split(text, 1)[0].strip() if text else ""
    if len(sentence) > DESCRIPTION_CHARS:
        sentence = sentence[:DESCRIPTION_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return sentence


def section_of(source: str) -> str:
    """The H2 a page is listed under: its top-level folder, as words; root files under "Docs"."""
    if "/" not in source:
        return ROOT_SECTION
    folder = source.split("/", 1)[0]
    return folder.replace("-", " ").replace("_", " ").strip().capitalize() or ROOT_SECTION


def site_title(pages: list[Page], fallback: str) -> tuple[str, str]:
    """(title, summary): the root index page's (index.md, README.md) title and first sentence when
    there is one, else `fallback` and a count of the pages."""
    for name in ("index.md", "README.md", "readme.md", "index.mdx"):
        home = next((p for p in pages if p.source == name), None)
        if home is not None:
            return home.title, home.description or f"{len(pages)} pages of documentation."
    return fallback, f"{len(pages)} pages of documentation."


def _line(text: str) -> str:
    return " ".join((text or "").split())


def llms_txt(pages: list[Page], url_for: Callable[[Page], str], title: str, summary: str) -> str:
    lines = [f"# {_line(title)}", "", f"> {_line(summary)}", ""]
    sections: dict[str, list[Page]] = {}
    for page in pages:  # an index of several doc sets lists each set's sections under its label
        name = section_of(page.source)
        sections.setdefault(f"{page.label}: {name}" if page.label else name, []).append(page)
    ordered = sorted(sections, key=lambda name: (name != ROOT_SECTION, name))
    for name in ordered:
        lines += [f"## {name}", ""]
        for page in sections[name]:
            link_text = _line(page.title).replace("[", "(").replace("]", ")")
            entry = f"- [{link_text}]({url_for(page)})"
            lines.append(entry + (f": {_line(page.description)}" if page.description else ""))
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def llms_full_txt(pages: list[Page], url_for: Callable[[Page], str], title: str, summary: str) -> str:
    out = [f"# {_line(title)}", "", f"> {_line(summary)}", ""]
    for page in pages:
        out += ["---", "", f"Source: {url_for(page)}", "", page.markdown.strip(), ""]
    return "\n".join(out).rstrip("\n") + "\n"

