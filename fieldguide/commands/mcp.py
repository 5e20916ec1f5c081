"""`fieldguide mcp [--http PORT]`: the MCP server (tools search_docs and ask, the docs as resources)."""
from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("Serve the index to coding agents over MCP: stdio by default, streamable HTTP with --http PORT "
        "(at /mcp). Tools: search_docs, ask; the docs folder's Markdown files are resources.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on this port instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="interface for --http (default 127.0.0.1)")
    parser.add_argument("--docs", type=Path, metavar="DIR",
                        help="Markdown folder exposed as resources (default FIELDGUIDE_DOCS_DIR; none: no resources)")
    from fieldguide.labels import add_label_argument

    add_label_argument(parser, "searches and questions")
    parser.add_argument("--collection", metavar="NAME", help="Weaviate collection (default FIELDGUIDE_COLLECTION)")


def run(args) -> int:
    import sys
    import threading

    from fieldguide.errors import FieldguideError
    from fieldguide.settings import get_settings

    settings = get_settings()
    docs = args.docs or settings.docs_dir
    if docs is not None and not Path(docs).is_dir():
        print(f"fieldguide mcp: {docs} is not a directory", file=sys.stderr)
        return 2
    update = {"docs_dir": Path(docs).resolve() if docs else None}
    if args.collection:
        update["collection"] = args.collection
    settings = settings.model_copy(update=update)
    try:
        from fieldguide.labels import with_cli_labels

        settings = with_cli_labels(settings, args.label)
    except ValueError as exc:
        print(f"fieldguide mcp: {exc}", file=sys.stderr)
        return 2

    from fieldguide.retrieval import open_resources
    from fieldguide.service.assets import resolve_asset_url
    from fieldguide.service.mcp_server import build_mcp_server
    from fieldguide.service.runs import GraphRunner
    from graph.graph import build_graph, build_retrieval_graph

    try:
        with open_resources(settings) as resources:
            runner = GraphRunner(graph=build_graph(), retrieval_graph=build_retrieval_graph(),
                                 configurable={"resources": resources})

            def link(source: str) -> str | None:  # nothing serves the files here unless a base URL does
                return resolve_asset_url(source, "", settings.image_base_url) if settings.image_base_url else None

            server = build_mcp_server(runner, settings, docs_dir=settings.docs_dir, resolve=link)

            def warm_up() -> None:  # the first tool call should not pay for loading the models
                try:
                    resources.warm_up()
                except Exception as exc:
                    print(f"warning: could not preload models: {exc}", file=sys.stderr)

            threading.Thread(target=warm_up, name="warm-up", daemon=True).start()
            if args.http:
                print(f"fieldguide mcp: streamable HTTP at http://{args.host}:{args.http}/mcp", file=sys.stderr)
                server.run("streamable-http", host=args.host, port=args.http, streamable_http_path="/mcp")
            else:
                server.run("stdio")
    except FieldguideError as exc:
        print(f"fieldguide mcp: {exc}", file=sys.stderr)
        return 1
    return 0
