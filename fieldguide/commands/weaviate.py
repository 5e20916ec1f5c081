"""`fieldguide weaviate build|start|stop|status`: the locally managed Weaviate server."""
from __future__ import annotations

import argparse

HELP = "Build, start, stop or inspect the local Weaviate server (used when FIELDGUIDE_WEAVIATE_URL is unset)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["build", "start", "stop", "status"],
                        help="build: put a weaviate-server binary in the data dir (go install, or download); "
                             "start: run it detached on loopback; stop: stop it; status: print its state as JSON")
    parser.add_argument("--force", action="store_true", help="build: rebuild even if a binary is found")


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
            state = weaviate_server.start(settings, log=say)
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
