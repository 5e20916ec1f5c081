"""`fieldguide weaviate build|start|stop|status`: the locally managed Weaviate server."""
from __future__ import annotations

import argparse

HELP = "Build, start, stop or inspect the local Weaviate server (used when FIELDGUIDE_WEAVIATE_URL is unset)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["build", "start", "stop", "status"],
                        help="build: put a weaviate-server binary in the data dir (go install, or download); "
                             "start: run it detached on loopback; stop: stop it; status: print its state as JSON")
    parser.add_argument("--force", action="store_true", help="build: rebuild even if a binary is found")
    parser.add_argument("--nodes", type=int, metavar="N",
                        help="start: run N nodes as one cluster on loopback (default FIELDGUIDE_LOCAL_NODES, 1); "
                             "clients then need FIELDGUIDE_LOCAL_NODES=N too")


def run(args) -> int:
    import json
    import sys

    from fieldguide import weaviate_server
    from fieldguide.errors import FieldguideError
    from fieldguide.settings import get_settings

    settings = get_settings()
    say = lambda message: print(message, file=sys.stderr)  # noqa: E731
    try:
        if args.action == "build":
            print(weaviate_server.build_binary(settings, force=args.force, log=say))
        elif args.action == "start":
            if settings.weaviate_url:
                say(f"FIELDGUIDE_WEAVIATE_URL is set ({settings.weaviate_url}): no local server is needed.")
            state = weaviate_server.start(settings, log=say, nodes=args.nodes)
            if (args.nodes or 1) > 1 and settings.local_nodes != args.nodes:
                say(f"note: set FIELDGUIDE_LOCAL_NODES={args.nodes} (and FIELDGUIDE_REPLICATION_FACTOR, e.g. "
                    f"{min(3, args.nodes)}, before the first ingest) so that fieldguide uses every node")
            print(json.dumps({"ready": True, **state}))
        elif args.action == "stop":
            stopped = weaviate_server.stop(settings)
            say("stopped" if stopped else "no local Weaviate server was running")
        else:
            print(json.dumps(weaviate_server.status(settings), indent=2))
    except FieldguideError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
