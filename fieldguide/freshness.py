"""Which index an answer was made from, and whether what it cited is still there.

* The *index version* is a digest of the manifest of ingested files (each file's path and
  content hash): any ingest that adds, changes or removes a file gives a new version, and
  re-ingesting the same files gives the same one.
* Each answer keeps its *cited sections*: chunk id, file, heading path and a digest of the
  text it read. The chunk id says where a section sits in the file's heading tree, never what
  it says (`ingest.chunk.make_group_id`), so after a re-ingest the id finds the section
  again and the digest tells whether its text changed.

`stale_answers` lists the stored answers made from another index version whose sections
changed or disappeared since.
"""
from __future__ import annotations

import hashlib
from typing import Any, Iterable, Sequence


def index_version(file_records: dict[str, dict]) -> str:
    """Digest of {source: {"sha256", ...}} (`ChunkStore.file_records`); "" for an empty index."""
    if not file_records:
        return ""
    digest = hashlib.sha256()
    for source in sorted(file_records):
        digest.update(f"{source}\t{file_records[source].get('sha256', '')}\n".encode("utf-8"))
    return digest.hexdigest()[:16]


def text_digest(text: str | None) -> str:
    return hashlib.sha1((text or "").encode("utf-8")).hexdigest()[:16]


def cited_sections(final: dict[str, Any]) -> list[dict]:
    """The sections an answer rests on: the blocks its citations name when the answer has
    citations, else every context block it was given (an answer without markers)."""
    context = [b for b in final.get("context") or [] if isinstance(b, dict) and b.get("chunk_id")]
    cited_ids = {c.get("chunk_id") for c in final.get("citations") or [] if isinstance(c, dict)}
    blocks = [b for b in context if b["chunk_id"] in cited_ids] if cited_ids else context
    sections, seen = [], set()
    for block in blocks:
        if block["chunk_id"] in seen:
            continue
        seen.add(block["chunk_id"])
        sections.append({"chunk_id": block["chunk_id"], "source": block.get("source", ""),
                         "heading_path": list(block.get("heading_path") or []),
                         "digest": text_digest(block.get("text")),
                         **({"label": block["label"]} if block.get("label") else {})})
    return sections


def _get(record: Any, name: str, default=None):
    return record.get(name, default) if isinstance(record, dict) else getattr(record, name, default)


def stale_answers(turns: Iterable[Any], current_version: str, lookup, since: float = 0.0) -> list[dict]:
    """Stored answers whose cited sections changed or disappeared.

    `lookup(chunk_ids) -> {chunk_id: text}` reads the current index. Only answers made from
    another index version are checked (the same version cannot differ)."""
    candidates = []
    for record in turns:
        if _get(record, "status", "done") != "done" or _get(record, "abstain"):
            continue
        if float(_get(record, "started_at", 0.0) or 0.0) < since:
            continue
        sections = _get(record, "sections") or []
        version = _get(record, "index_version")
        if not sections or not version or version == current_version:
            continue
        candidates.append((record, sections))
    ids = sorted({s["chunk_id"] for _, sections in candidates for s in sections})
    current = lookup(ids) if ids else {}
    stale = []
    for record, sections in candidates:
        changes = []
        for s in sections:
            if s["chunk_id"] not in current:
                changes.append({**_where(s), "change": "disappeared"})
            elif text_digest(current[s["chunk_id"]]) != s.get("digest"):
                changes.append({**_where(s), "change": "changed"})
        if changes:
            stale.append({"turn": f"{_get(record, 'conversation_id')}#{_get(record, 'turn')}",
                          "question": _get(record, "standalone_question") or _get(record, "question"),
                          "answer": _get(record, "answer") or "", "index_version": _get(record, "index_version"),
                          "sections": changes})
    return stale


def _where(section: dict) -> dict:
    where = {"source": section.get("source", ""), "heading_path": list(section.get("heading_path") or [])}
    if section.get("label"):  # which doc set the file is of
        where["label"] = section["label"]
    return where


def render_stale(stale: Sequence[dict], fmt: str, current_version: str) -> str:
    import csv
    import html
    import io
    import json

    if fmt == "json":
        return json.dumps({"index_version": current_version, "stale": list(stale)}, ensure_ascii=False,
                          indent=2) + "\n"
    def where(c):
        return f"{c['source']}#{' > '.join(c['heading_path'])} ({c['change']})"
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["turn", "question", "index_version", "sections"])
        for s in stale:
            writer.writerow([s["turn"], s["question"], s["index_version"], "; ".join(where(c) for c in s["sections"])])
        return out.getvalue()
    if fmt == "html":
        e = html.escape
        rows = "".join(f"<tr><td>{e(s['turn'])}</td><td>{e(s['question'])}</td><td>"
                       f"{'<br>'.join(e(where(c)) for c in s['sections'])}</td></tr>" for s in stale)
        return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Stale answers</title></head>"
                f"<body><h1>Stale answers</h1><p>{len(stale)} stored answers cite sections that changed or "
                f"disappeared (index version now {e(current_version)}).</p><table><tr><th>turn</th><th>question"
                f"</th><th>sections</th></tr>{rows}</table></body></html>\n")
    lines = ["# Stale answers", "",
             f"{len(stale)} stored answers cite sections that changed or disappeared since they were given "
             f"(index version now `{current_version}`).", ""]
    for s in stale:
        lines.append(f"- **{s['question']}** ({s['turn']}, index {s['index_version']}): "
                     + "; ".join(where(c) for c in s["sections"]))
    return "\n".join(lines) + "\n"
