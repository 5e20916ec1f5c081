"""Citation markers: `[n]` names context block n (1-based, as the prompt numbers them).

A marker that names no block is removed before the reader sees it. `citations_for` turns
the numbers an answer uses into the citation list of the answer line and the `done` event:
chunk id, source, heading path, line range and a URL (`fieldguide.source_links`).
"""
from __future__ import annotations

import re

from fieldguide.source_links import source_url

MARKER = re.compile(r"\s?\[(\d{1,3})\]")
_NUMBER = re.compile(r"\[(\d{1,3})\]")


def cited_numbers(text: str) -> list[int]:
    """The block numbers a text cites, in order of first use."""
    return list(dict.fromkeys(int(n) for n in _NUMBER.findall(text or "")))


def without_markers(text: str) -> str:
    return MARKER.sub("", text or "")


def drop_unknown_markers(text: str, block_count: int) -> str:
    """`text` without the markers that name no block."""
    return MARKER.sub(lambda m: m.group(0) if 1 <= int(m.group(1)) <= block_count else "", text or "")


def citations_for(numbers, blocks: list[dict], template: str | None = None) -> list[dict]:
    """One citation per distinct valid number, in ascending order."""
    citations = []
    for n in sorted({int(n) for n in numbers if 1 <= int(n) <= len(blocks)}):
        block = blocks[n - 1]
        citations.append({
            "n": n,
            "chunk_id": block.get("chunk_id"),
            "source": block.get("source"),
            "heading_path": list(block.get("heading_path") or []),
            "page_title": block.get("page_title") or "",
            "line_start": block.get("line_start"),
            "line_end": block.get("line_end"),
            "url": source_url(block.get("source") or "", block.get("line_start"), block.get("line_end"), template,
                              block.get("label")),
            **({"label": block["label"]} if block.get("label") else {}),
        })
    return citations


class MarkerFilter:
    """Streams text through, holding back a possible marker until it is complete, and dropping
    markers that name no block (for an answer that is not checked sentence by sentence)."""

    def __init__(self, block_count: int):
        self.block_count = block_count
        self._held = ""

    def feed(self, text: str) -> str:
        text = self._held + text
        self._held = ""
        cut = text.rfind("[")
        if cut != -1 and re.fullmatch(r"\[\d{0,3}", text[cut:]):
            text, self._held = text[:cut], text[cut:]
        # A blank before a marker goes with it: hold a trailing blank until the next piece shows.
        stripped = text.rstrip()
        text, self._held = stripped, text[len(stripped):] + self._held
        return drop_unknown_markers(text, self.block_count)

    def close(self) -> str:
        held, self._held = self._held, ""
        return drop_unknown_markers(held, self.block_count)
