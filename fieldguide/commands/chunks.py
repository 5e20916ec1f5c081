"""`fieldguide chunks DOCS_DIR`: the chunks of a docs folder as JSON Lines; no store, no network."""
from __future__ import annotations

import argparse
from pathlib import Path

# Files tokenized together: one parallel batch, bounded memory.
FILES_PER_BATCH = 128

HELP = "Print the chunks of a docs folder as JSON Lines (no store, no network)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("docs_dir", type=Path, metavar="DOCS_DIR")
    parser.add_argument("--debug", action="store_true",
                        help="also print content_kind_reason (why a chunk is screen or prose)")


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from ingest.chunker import Chunker, iter_markdown_files

    docs_dir: Path = args.docs_dir
    if not docs_dir.is_dir():
        print(f"fieldguide chunks: {docs_dir} is not a folder", file=sys.stderr)
        return 2
    chunker = Chunker()
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    files = []
    for path in iter_markdown_files(docs_dir):
        try:
            files.append((path.read_bytes(), path.relative_to(docs_dir).as_posix()))
        except OSError as exc:
            print(f"warning: {path}: cannot read ({exc.strerror}); skipped", file=sys.stderr)
    for first in range(0, len(files), FILES_PER_BATCH):
        lines = []
        for chunked in chunker.chunk_many(files[first:first + FILES_PER_BATCH]):
            for warning in chunked.warnings:
                print(f"warning: {warning}", file=sys.stderr)
            for chunk in chunked.chunks:
                record = chunk.to_record()
                if args.debug:
                    record["content_kind_reason"] = chunk.content_kind_reason
                lines.append(dumps(record))
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    return 0
