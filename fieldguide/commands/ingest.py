"""`fieldguide ingest DOCS_DIR [--label NAME] [--reindex] [--collection NAME] [--json]`, or
`fieldguide ingest --config DOCSETS.toml` for several labelled folders (`fieldguide.labels`)."""
from __future__ import annotations

import argparse
from pathlib import Path

HELP = "Chunk, embed and store a Markdown folder in Weaviate (incremental: unchanged files are skipped)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("docs_dir", type=Path, metavar="DOCS_DIR", nargs="?", help="folder of Markdown files")
    parser.add_argument("--label", metavar="NAME",
                        help="the doc set this folder is (a version or a product, e.g. v2), kept beside the other "
                        "sets of the collection; ingesting it never touches another set's chunks")
    parser.add_argument("--config", type=Path, metavar="DOCSETS.toml",
                        help="ingest every [[docset]] (folder and label) the file lists, one after another")
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
    if (args.docs_dir is None) == (args.config is None):
        print("error: give either DOCS_DIR or --config DOCSETS.toml", file=sys.stderr)
        return 2
    if args.config is not None and args.label:
        print("error: --label names the set of DOCS_DIR; a --config file gives each folder its label", file=sys.stderr)
        return 2
    try:
        from fieldguide.labels import DocSet, read_docsets
        from ingest.pipeline import ingest_folder

        docsets = read_docsets(args.config) if args.config else [DocSet(args.docs_dir, args.label)]
        summaries = []
        for docset in docsets:
            if len(docsets) > 1:
                print(f"doc set {docset.label or '(unnamed)'}: {docset.folder}", file=sys.stderr)
            summary = ingest_folder(docset.folder, settings, reindex=args.reindex, wait=not args.no_wait,
                                    progress=not (args.json or args.no_progress) and sys.stderr.isatty(),
                                    label=docset.label)
            summaries.append((docset, summary))
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
    for docset, summary in summaries:
        result = summary.to_dict()
        if docset.label:
            result["label"] = docset.label
        if args.json:
            print(json.dumps(result))
        else:
            print(
                (f"{docset.label}: " if docset.label else "")
                + f"{result['files_seen']} files: {result['files_added']} added, {result['files_changed']} changed, "
                f"{result['files_skipped']} unchanged, {result['files_deleted']} deleted; "
                f"{result['chunks_written']} chunks written, {result['chunks_deleted']} deleted "
                f"in {result['seconds']:.1f}s", file=sys.stderr)
    return 0
