"""A heading's text as written and as a reader sees it.

`heading_path` holds each heading's text as written in the Markdown, the `#` markers and a
closing sequence left out: `## Installing {#install}` is "Installing {#install}". That is the
section's identity (group and chunk ids derive from it) and what result lines report, so a
heading path taken from the source file matches it. An explicit id (`{#install}`, the
attribute list of mkdocs, Docusaurus and Pandoc) is not text a reader sees: the rendered page
shows "Installing", and that is what is embedded, scored, shown in sources and quoted to the
model (`heading_label`). Inline Markdown in a heading is rendered as text the same way: a
link shows its text, an image its alt text, a code span its code, emphasis its words, and an
HTML tag (a Docusaurus badge, an anchor) nothing. `### Storage [(External Libraries)](/docs/x)`
reads "Storage (External Libraries)": the link's target is no word of the heading.
"""
from __future__ import annotations

import re
from typing import Iterable

from fieldguide.words import link_texts

_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_EMPHASIS = re.compile(r"(?<![\w*])(\*{1,3}|_{1,3})(?=\S)(.+?)(?<=\S)\1(?![\w*])")


def split_heading_id(title: str) -> tuple[str, str | None]:
    """(the title without a trailing explicit id, the id), or (title, None) when it has none."""
    if title.endswith("}") and "{#" in title:
        head, _, tail = title.rpartition("{#")
        if tail[:-1] and " " not in tail[:-1]:
            return head.rstrip(), tail[:-1]
    return title, None


def heading_label(title: str) -> str:
    """The heading as the rendered page shows it: "Installing {#install}" reads "Installing",
    "[`PAPERLESS_REDIS=<url>`](#PAPERLESS_REDIS)" reads "PAPERLESS_REDIS=<url>"."""
    return rendered_text(split_heading_id(title)[0])


def rendered_text(markdown: str) -> str:
    """Inline Markdown as the page shows it (see the module doc); code spans are kept as written."""
    if not any(mark in markdown for mark in "`[*_<"):
        return markdown
    markdown = link_texts(markdown)  # a link's text may hold a code span: links first
    pieces, last = [], 0
    for match in _CODE_SPAN.finditer(markdown):  # code is shown as written: no emphasis, no tags in it
        pieces.append(_render_prose(markdown[last:match.start()]))
        pieces.append(match.group(2).strip())
        last = match.end()
    pieces.append(_render_prose(markdown[last:]))
    return " ".join("".join(pieces).split())


def _render_prose(text: str) -> str:
    text = _HTML_TAG.sub(" ", text)
    for _ in range(2):  # **_nested_** emphasis
        text = _EMPHASIS.sub(r"\2", text)
    return text


def heading_labels(heading_path: Iterable[str] | None) -> list[str]:
    return [heading_label(title) for title in heading_path or ()]


def breadcrumb(heading_path: Iterable[str] | None, separator: str = " > ", page_title: str | None = None) -> str:
    """The path as a reader's breadcrumb: "Setup > Installing"; after the page's title when only
    its front matter has one (`page_title`), as the site shows it: "Getting started > Installing"."""
    return separator.join(shown_labels(heading_path, page_title))


def shown_labels(heading_path: Iterable[str] | None, page_title: str | None = None) -> list[str]:
    """The breadcrumb's crumbs as the site shows them: the page's front matter title (a chunk's
    `page_title`, set only when the page has no H1 of its own), then the headings' labels."""
    labels = heading_labels(heading_path)
    title = (page_title or "").strip()
    return ([title] if title and (not labels or labels[0] != title) else []) + labels
