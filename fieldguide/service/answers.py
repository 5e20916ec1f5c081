"""What a one-call client gets back: an answer's citations and a search's hits, as plain dicts.

The OpenAI-compatible chat and the MCP tools share these shapes. Citations are the final
state's own (`citations`, numbered like the answer's `[n]` markers, so a client can match
each marker to its source) when the graph gives them; otherwise one per distinct section of
the context the answer was generated from, in context order, in the same shape (the answer
line's, docs/architecture.md). A citation URL relative to the service (`/docs-assets/guide.md#L12-L30`) is
given as `resolve` gives its file, with the line anchor kept; an absolute one (a configured
source-URL template) is left as it is.
"""
from __future__ import annotations

from typing import Any, Callable

from fieldguide.headings import breadcrumb

Resolve = Callable[[str], str | None]  # a docs file's path -> the URL a reader opens (None: none)

CITATION_FIELDS = ("chunk_id", "source", "heading_path", "line_start", "line_end", "page_title")


def citations_for(final: dict[str, Any], resolve: Resolve) -> list[dict[str, Any]]:
    given = final.get("citations")
    if isinstance(given, list):
        return [_resolved(dict(citation), resolve) for citation in given]
    citations: list[dict[str, Any]] = []
    seen: set[tuple] = set()
    for block in final.get("context") or []:
        key = (block.get("source"), tuple(block.get("heading_path") or ()))
        if key in seen:
            continue
        seen.add(key)
        citation = {"n": len(citations) + 1}
        citation.update({name: block[name] for name in CITATION_FIELDS if block.get(name) is not None})
        citation["heading_path"] = list(block.get("heading_path") or [])
        citation["url"] = resolve(block["source"]) if block.get("source") else None
        citations.append(citation)
    return citations


def _resolved(citation: dict[str, Any], resolve: Resolve) -> dict[str, Any]:
    """A service-relative URL as `resolve` gives the file, line anchor kept; None when nothing
    serves the file to this client (`resolve` gives None: MCP over stdio)."""
    url = citation.get("url")
    if citation.get("source") and (not url or url.startswith("/")):
        anchor = url.partition("#")[2] if url else ""
        base = resolve(citation["source"])
        citation["url"] = base + (f"#{anchor}" if anchor else "") if base else None
    return citation


def search_hits(state: dict[str, Any], k: int, resolve: Resolve) -> list[dict[str, Any]]:
    """The best `k` chunks of a retrieval run: the capped candidates (full records, line ranges
    included) when the state has them, else its context blocks."""
    ranked = state.get("cap_results")
    if ranked is None:
        ranked = state.get("context") or []
    hits = []
    for chunk in ranked[:k]:
        path = list(chunk.get("heading_path") or [])
        score = chunk.get("rerank_score")
        hits.append({
            "chunk_id": chunk.get("chunk_id"),
            "source": chunk.get("source"),
            "heading_path": path,
            "page_title": chunk.get("page_title") or "",
            "breadcrumb": breadcrumb(path, " › ", chunk.get("page_title")),
            "line_start": chunk.get("line_start"),
            "line_end": chunk.get("line_end"),
            "url": resolve(chunk["source"]) if chunk.get("source") else None,
            "score": round(float(score), 4) if score is not None else None,
            "similarity": round(float(chunk["similarity"]), 4) if chunk.get("similarity") is not None else None,
            "label": chunk.get("label") or None,
            "text": chunk.get("text", ""),
        })
    return hits
