#!/usr/bin/env python3
"""Chunking benchmark: `fieldguide chunks` against LangChain's Markdown splitters.

Both run as whole processes on the same files (interpreter start and imports included),
best of --repeat runs each. Prints throughput, chunk and part counts, the largest token
count against the limit, lost lines and chunk types, plus how many of the LangChain
chunks the embedding model would silently truncate.

    python benchmarks/bench_chunking.py DOCS_DIR [--repeat 5] [--json OUT]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

LANGCHAIN_SCRIPT = r"""
import sys, pathlib
from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter
docs = pathlib.Path(sys.argv[1])
recursive = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
headers = MarkdownHeaderTextSplitter(
    headers_to_split_on=[("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")], strip_headers=False)
out = []
for path in sorted(docs.rglob("*.md")):
    text = path.read_text(encoding="utf-8", errors="replace")
    for section in headers.split_text(text):
        out.extend(recursive.split_text(section.page_content))
sys.stdout.write("\x1e".join(out))
"""


def best_time(command: list[str], repeat: int) -> tuple[float, bytes]:
    best, output = float("inf"), b""
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, check=True)
        best = min(best, time.perf_counter() - started)
        output = done.stdout
    return best, output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("docs", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    files = sorted(args.docs.rglob("*.md"))
    size = sum(p.stat().st_size for p in files)
    fieldguide = shutil.which("fieldguide") or str(Path(sys.executable).with_name("fieldguide"))
    ours_s, output = best_time([fieldguide, "chunks", str(args.docs)], args.repeat)
    theirs_s, theirs_out = best_time([sys.executable, "-c", LANGCHAIN_SCRIPT, str(args.docs)], args.repeat)

    rows = [json.loads(line) for line in output.decode("utf-8").splitlines() if line.strip()]
    from ingest.tokens import get_counter

    counter = get_counter(os.environ.get("FIELDGUIDE_EMBEDDING_MODEL"))
    limit = int(counter.max_tokens * float(os.environ.get("FIELDGUIDE_TOKEN_LIMIT_FRACTION", "0.85")))
    theirs = theirs_out.decode("utf-8").split("\x1e")
    their_tokens = counter.count_many(theirs)

    # lost lines: every non-blank body line must be in some chunk of its file (or, for a
    # line longer than a part, all of its words)
    by_source = collections.defaultdict(list)
    for row in rows:
        by_source[row["source"]].append(row["text"])
    lost = 0
    for path in files:
        joined = "\n".join(by_source[path.relative_to(args.docs).as_posix()])
        lines = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n").split("\n")
        body = 0
        if lines and lines[0].strip() == "---":
            body = next((i + 1 for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), 0)
        for line in lines[body:]:
            if line.strip() and line.strip() not in joined and not all(w in joined for w in line.split()):
                lost += 1

    figures = {
        "files": len(files),
        "megabytes": round(size / 1e6, 3),
        "fieldguide_seconds": round(ours_s, 3),
        "fieldguide_mb_per_s": round(size / 1e6 / ours_s, 2),
        "langchain_seconds": round(theirs_s, 3),
        "ratio_to_langchain": round(ours_s / theirs_s, 2),
        "chunks": len(rows),
        "groups": len({r["group_id"] for r in rows}),
        "split_parts": sum(1 for r in rows if r["part_count"] > 1),
        "chunk_types": dict(collections.Counter(r["chunk_type"] for r in rows)),
        "content_kinds": dict(collections.Counter(r["content_kind"] for r in rows)),
        "max_token_count": max((r["token_count"] for r in rows), default=0),
        "token_limit": limit,
        "model_max_tokens": counter.max_tokens,
        "over_limit": sum(1 for r in rows if r["token_count"] > limit),
        "lost_lines": lost,
        "langchain_chunks": len(theirs),
        "langchain_over_model_max": sum(1 for n in their_tokens if n > counter.max_tokens),
    }
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key.ljust(width)}  {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
