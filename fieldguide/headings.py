"""A heading's text as written and as a reader sees it.

`heading_path` holds each heading's text as written in the Markdown, the `#` markers and a
closing sequence left out: `## Installing {#install}` is "Installing {#install}". That is the
section's identity (group and chunk ids derive from it) and what result lines report, so a
heading path taken from the source file matches it. An explicit id (`{#install}`, the
attribute list of mkdocs, Docusaurus and Pandoc) is not text a reader sees: the rendered page
shows "Installing", and that is what is embedded, scored, shown in sources and quoted to the
model (`heading_label`).
"""
from __future__ import annotations

from typing import Iterable


def split_heading_id(title: str) -> tuple[str, str | None]:
    """(the title without a trailing explicit id, the id), or (title, None) when it has none."""
    if title.endswith("}") and "{#" in title:
        head, _, tail = title.rpartition("{#")
        if tail[:-1] and " " not in tail[:-1]:
            return head.rstrip(), tail[:-1]
    return title, None


def heading_label(title: str) -> str:
    """The heading as the rendered page shows it: "Installing {#install}" reads "Installing"."""
    return split_heading_id(title)[0]


def heading_labels(heading_path: Iterable[str] | None) -> list[str]:
    return [heading_label(title) for title in heading_path or ()]


def breadcrumb(heading_path: Iterable[str] | None, separator: str = " > ") -> str:
    """The path as a reader's breadcrumb: "Setup > Installing"."""
    return separator.join(heading_labels(heading_path))
