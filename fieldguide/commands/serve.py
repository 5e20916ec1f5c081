"""`fieldguide serve [--host H] [--port P] [--docs DIR] [--collection NAME]`."""
from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("Serve the HTTP API and the chat page. A docs folder named with --docs (or FIELDGUIDE_DOCS_DIR) "
        "is ingested first, incrementally; without one the collection is served as it is.")

SAMPLE_DOCS = Path(__file__).resolve().parent.parent / "sample_docs"  # `--docs` it to try fieldguide out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--docs", type=Path, metavar="DIR",
                        help="Markdown folder to ingest into the collection and serve images from (without it "
                             "nothing is ingested; the bundled sample docs are in fieldguide/sample_docs)")
    parser.add_argument("--collection", metavar="NAME", help="Weaviate collection (default FIELDGUIDE_COLLECTION)")
    parser.add_argument("--no-ingest", action="store_true", help="serve the collection as it is, without ingesting")
    parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])


def _docs_of_the_collection(settings):
    """Serving a collection as it is: its images come from the folder it was ingested from, when
    that is here; an empty collection gets a hint instead of the sample docs."""
    import sys

    from fieldguide.errors import FieldguideError
    from fieldguide.store import open_store

    try:
        with open_store(settings) as store:
            chunks, folder = store.count(), store.docs_root()
    except FieldguideError as exc:
        print(f"warning: {exc}", file=sys.stderr)
        return settings
    if not chunks:
        print(f"note: collection {settings.collection} holds no documents yet: serve a folder with "
              f"`fieldguide serve --docs DIR` (or `fieldguide ingest DIR`; sample docs: {SAMPLE_DOCS})",
              file=sys.stderr)
    if folder and Path(folder).is_dir():
        return settings.model_copy(update={"docs_dir": Path(folder)})
    return settings


def run(args) -> int:
    # Before anything heavy is imported or any thread starts: arenas created later are capped.
    from fieldguide.service.memory import limit_malloc_arenas, settle_heap

    limit_malloc_arenas()

    import sys
    import threading

    from fieldguide.errors import FieldguideError
    from fieldguide.settings import get_settings

    settings = get_settings()
    docs = args.docs or settings.docs_dir  # ingest only a folder named for this collection
    if docs is not None and not Path(docs).is_dir():
        print(f"error: {docs} is not a directory", file=sys.stderr)
        return 2
    update = {"docs_dir": Path(docs).resolve() if docs is not None else None}
    if args.collection:
        update["collection"] = args.collection
    settings = settings.model_copy(update=update)

    try:
        if docs is not None and not args.no_ingest:
            from ingest.pipeline import ingest_folder

            summary = ingest_folder(settings.docs_dir, settings, progress=sys.stderr.isatty())
            print(f"ingested {settings.docs_dir}: {summary.files_seen} files, {summary.files_skipped} unchanged, "
                  f"{summary.chunks_written} chunks written", file=sys.stderr)
        elif docs is None:
            settings = _docs_of_the_collection(settings)
        import uvicorn

        from fieldguide.service import create_app

        app = create_app(settings)
    except FieldguideError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    resources = app.state.service.resources
    if resources is not None:
        # Load the models while the server starts, so the first question does not pay for it.
        def warm_up() -> None:
            try:
                resources.warm_up()
            except Exception as exc:  # the first question will report it as an error event
                print(f"warning: could not preload models: {exc}", file=sys.stderr)
                return
            settle_heap()  # the models are here to stay: keep them out of later collections

        threading.Thread(target=warm_up, name="warm-up", daemon=True).start()

    print(f"fieldguide: chat page at http://{args.host}:{args.port}/", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=5)
    return 0
