"""The `fieldguide` command line.

Each sub-command lives in `fieldguide/commands/<name>.py` and exposes `HELP`,
`add_arguments(parser)` and `run(args) -> int`. Command modules import their heavy
dependencies inside `run`, so `fieldguide chunks` never pays for torch or Weaviate.
"""
from __future__ import annotations

import argparse
import atexit
import importlib
import sys
import warnings

COMMANDS = ["chunks", "ingest", "retrieve", "ask", "mcp", "serve", "eval", "gaps", "bench", "weaviate"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fieldguide", description="Grounded answers from Markdown docs.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"fieldguide.commands.{name}")
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_module=module)
    return parser


def _no_leak_reports_at_exit() -> None:
    # weaviate-client turns every warning category on when it is imported (`simplefilter("default")`),
    # so the files llama-cpp-python keeps open on /dev/null for the process's life were reported as
    # leaks on stderr when it ended; they are closed by the exit itself.
    warnings.simplefilter("ignore", ResourceWarning)


def main(argv: list[str] | None = None) -> int:
    atexit.register(_no_leak_reports_at_exit)
    args = build_parser().parse_args(argv)
    try:
        return int(args._module.run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `fieldguide chunks DIR | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
