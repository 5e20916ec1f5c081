"""`fieldguide ingest DOCS_DIR [--reindex] [--collection NAME] [--json]`."""
from __future__ import annotations

import argparse
from pathlib import Path

HELP = "Chunk, embed and store a Markdown folder in Weaviate (incremental: unchanged files are skipped)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("docs_dir", type=Path, metavar="DOCS_DIR", help="folder of Markdown files")
    parser.add_argument("--reindex", action="store_true",
                        help="drop the collection and rebuild it from the folder (e.g. after changing the embedding model)")
    parser.add_argument("--collection", metavar="NAME", help="Weaviate collection (default FIELDGUIDE_COLLECTION)")
    parser.add_argument("--json", action="store_true", help="end with one JSON summary object on stdout")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--no-wait", action="store_true",
                        help="refuse at once, instead of waiting, while another ingest of the collection runs")


def run(args) -> int:
    import json
    import sys

    from fieldguide.errors import FieldguideError
    from fieldguide.settings import get_settings

    settings = get_settings()
    if args.collection:
        settings = settings.model_copy(update={"collection": args.collection})
    try:
        from ingest.pipeline import ingest_folder

        summary = ingest_folder(args.docs_dir, settings, reindex=args.reindex, wait=not args.no_wait,
                                progress=not (args.json or args.no_progress) and sys.stderr.isatty())
    except FieldguideError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        # a server that dies or refuses mid-run: one line, not a traceback
        from weaviate.exceptions import WeaviateBaseError

        if not isinstance(exc, WeaviateBaseError):
            raise
        print(f"error: Weaviate failed during ingest: {' '.join(str(exc).split())[:400]} "
              "(re-run the same command: finished files are kept, the rest is redone)", file=sys.stderr)
        return 1
    result = summary.to_dict()
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['files_seen']} files: {result['files_added']} added, {result['files_changed']} changed, "
            f"{result['files_skipped']} unchanged, {result['files_deleted']} deleted; "
            f"{result['chunks_written']} chunks written, {result['chunks_deleted']} deleted "
            f"in {result['seconds']:.1f}s", file=sys.stderr)
    return 0
