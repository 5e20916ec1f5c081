"""How a docs folder's site dialect is read: constructs found, syntax left, lines lost.

    python benchmarks/bench_dialects.py DOCS_DIR [DOCS_DIR ...] [--json]

For each folder: the dialect detected (or FIELDGUIDE_DOCS_DIALECT), its files and chunks, the
chunks whose source text holds a recognised construct of any family (`ingest.dialects`), and
the chunks whose embedded text (`embed_text`) or quoted text (`reading`) still shows one's
syntax (target 0). Lost lines: non-blank body lines of a file that no chunk's text covers
(target 0: the reading never changes what `text` keeps). `--plain` measures the chunker with
the pass off (FIELDGUIDE_DOCS_DIALECT=commonmark), for the figures before it.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def measure(docs_dir: Path, setting: str | None) -> dict:
    from ingest.chunker import Chunker, iter_markdown_files
    from ingest.dialects import FAMILIES, folder_dialect_of, leftover_syntax
    from ingest.markdown import decode_markdown, parse_markdown

    paths = iter_markdown_files(docs_dir)
    chunker = Chunker()
    dialect = folder_dialect_of(docs_dir, paths, setting if setting is not None else chunker.settings.docs_dialect)
    chunker.dialect = dialect
    started = time.perf_counter()
    files = [(p.read_bytes(), p.relative_to(docs_dir).as_posix()) for p in paths]
    chunked = chunker.chunk_many(files)
    seconds = time.perf_counter() - started
    chunks = [c for f in chunked for c in f.chunks]
    # the folder's own families, as detected (also with the pass off): a Jinja template in a
    # MkDocs folder's code sample is no construct
    detected = folder_dialect_of(docs_dir, paths).families
    families = [f for f in FAMILIES if f in detected]
    with_constructs = sum(1 for c in chunks if leftover_syntax(c.text, families))
    embedded_left = [c for c in chunks if leftover_syntax(c.embed_text, families)]
    quoted_left = [c for c in chunks if leftover_syntax(c.reading if c.reading is not None else c.text, families)]
    by_family: dict[str, int] = {}
    for chunk in embedded_left + quoted_left:
        for family in leftover_syntax(chunk.embed_text + "\n" + (chunk.reading or ""), families):
            by_family[family] = by_family.get(family, 0) + 1
    lost = 0
    for (raw, source), result in zip(files, chunked):
        text, _ = decode_markdown(raw, source)
        doc = parse_markdown(text, source)
        covered = set()
        for chunk in result.chunks:
            covered.update(range(chunk.line_start - 1, chunk.line_end))
        lost += sum(1 for i in range(doc.body_start, len(doc.lines)) if doc.lines[i].strip() and i not in covered)
    return {
        "docs": str(docs_dir), "dialect": dialect.name, "files": len(files), "chunks": len(chunks),
        "chunks_with_constructs": with_constructs, "embedded_with_syntax": len(embedded_left),
        "quoted_with_syntax": len(quoted_left), "syntax_left_by_family": by_family, "lost_lines": lost,
        "page_titles": sum(1 for c in chunks if c.page_title), "screen_chunks": sum(c.content_kind == "screen" for c in chunks),
        "seconds": round(seconds, 2), "examples": [c.embed_text[:300] for c in embedded_left[:3]] + [c.reading[:300] for c in quoted_left[:3]],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", nargs="+", type=Path)
    parser.add_argument("--plain", action="store_true", help="with the dialect pass off (the figures before it)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(d, "commonmark" if args.plain else None) for d in args.docs]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'docs':40} {'dialect':22} {'files':>5} {'chunks':>6} {'constr.':>7} {'emb.syn':>7} "
          f"{'quo.syn':>7} {'lost':>4} {'titles':>6} {'screen':>6} {'s':>5}")
    for r in rows:
        print(f"{r['docs'][-40:]:40} {r['dialect'][:22]:22} {r['files']:5} {r['chunks']:6} "
              f"{r['chunks_with_constructs']:7} {r['embedded_with_syntax']:7} {r['quoted_with_syntax']:7} "
              f"{r['lost_lines']:4} {r['page_titles']:6} {r['screen_chunks']:6} {r['seconds']:5}")
        for example in r["examples"]:
            print("   left:", example.replace("\n", " | ")[:240])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
