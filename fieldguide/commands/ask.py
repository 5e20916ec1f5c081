"""`fieldguide ask "QUESTION" [--json]`: stream a grounded answer, then its sources."""
from __future__ import annotations

import argparse
import json
import sys

HELP = "Ask one question: the answer streams to the terminal, then the sources (--json: the final state)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", help="the question, in quotes")
    parser.add_argument("--json", action="store_true", help="print the final state as JSON instead of streaming")
    parser.add_argument("--collection", help="Weaviate collection (default FIELDGUIDE_COLLECTION)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="per-request option, e.g. --set max_chunks=3 (repeatable)")


def format_sources(context: list[dict]) -> list[str]:
    lines, seen = [], set()
    for block in context:
        key = (block["source"], tuple(block["heading_path"]))
        if key in seen:
            continue
        seen.add(key)
        section = " > ".join(block["heading_path"]) or "(intro)"
        lines.append(f"  - {block['source']}: {section}")
    return lines


def run(args) -> int:
    question = " ".join(args.question.split())
    from fieldguide.commands.retrieve import parse_overrides
    from fieldguide.errors import FieldguideError
    from fieldguide.settings import get_settings

    settings = get_settings()
    if not question:
        print("fieldguide ask: the question is empty", file=sys.stderr)
        return 2
    if len(question) > settings.max_question_chars:
        print(f"fieldguide ask: the question is longer than {settings.max_question_chars} characters",
              file=sys.stderr)
        return 2
    try:
        overrides = parse_overrides(args.set)
    except ValueError as exc:
        print(f"fieldguide ask: {exc}", file=sys.stderr)
        return 2
    if args.collection:
        settings = settings.model_copy(update={"collection": args.collection})

    import asyncio

    from fieldguide.retrieval import open_resources, result_line, stream_answer
    from graph.graph import build_graph

    async def main() -> dict:
        final: dict = {}
        streamed = False
        with open_resources(settings) as resources:
            async for kind, payload in stream_answer(build_graph(), question, resources, overrides):
                if kind == "token":
                    streamed = True
                    if not args.json:
                        sys.stdout.write(payload)
                        sys.stdout.flush()
                else:
                    final = payload
            if args.json:  # which index this answer came from (fieldguide.freshness)
                from fieldguide.freshness import index_version

                final["index_version"] = index_version(resources.store.file_records()) or None
        if not args.json:
            if not streamed:
                sys.stdout.write(final.get("answer", ""))
            sys.stdout.write("\n")
            sources = format_sources(final.get("context") or [])
            if sources:
                sys.stdout.write("\nSources:\n" + "\n".join(sources) + "\n")
        return final

    try:
        final = asyncio.run(main())
    except FieldguideError as exc:
        print(f"fieldguide ask: {exc}", file=sys.stderr)
        return 1
    if args.json:
        line = result_line(None, final, final.get("total_ms", 0.0))
        timings = dict(final.get("timings_ms") or {})
        timings["total"] = round(final.get("total_ms", 0.0), 3)
        state = {
            "question": question,
            **{k: v for k, v in line.items() if k != "id"},
            "intent_confidence": final.get("intent_confidence"),
            "answer": final.get("answer", ""),
            "index_version": final.get("index_version"),
            "nearest": final.get("nearest") or [],
            "timings_ms": timings,
        }
        print(json.dumps(state, ensure_ascii=False, indent=2))
    return 0
