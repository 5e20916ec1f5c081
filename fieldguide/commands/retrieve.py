"""`fieldguide retrieve --batch QUESTIONS.jsonl`: one retrieval result line per question."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HELP = "Retrieve context for a batch of questions (JSON Lines in, result lines out); no generation."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", required=True, type=Path, metavar="QUESTIONS.jsonl",
                        help='JSON Lines, one {"id": ..., "question": ...} a line')
    from fieldguide.labels import add_label_argument

    add_label_argument(parser, "every question")
    parser.add_argument("--collection", help="Weaviate collection (default FIELDGUIDE_COLLECTION)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="per-request option, e.g. --set max_chunks=3 (repeatable)")


def read_questions(path: Path, conversations: bool = False) -> list[dict]:
    """JSON Lines of {"id", "question"}; with `conversations`, also {"id", "turns": [{"question"}, ...]}."""
    questions = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if conversations and isinstance(item, dict) and "turns" in item:
                turns = item["turns"]
                if not isinstance(turns, list) or not turns or not all(
                        isinstance(t, dict) and str(t.get("question", "")).strip() for t in turns):
                    raise ValueError(f"{path}:{number}: \"turns\" must be a non-empty list of objects "
                                     "with a non-empty \"question\"")
            elif not isinstance(item, dict) or not str(item.get("question", "")).strip():
                raise ValueError(f"{path}:{number}: expected an object with a non-empty \"question\""
                                 + (" or \"turns\"" if conversations else ""))
            questions.append(item)
    return questions


def parse_overrides(pairs: list[str]) -> dict:
    """--set NAME=VALUE pairs as run options, checked against their declaration (a typo or a
    value out of bounds is a ValueError naming the option)."""
    from graph.options import QueryOptions

    overrides = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--set expects NAME=VALUE, got {pair!r}")
        overrides[name.strip()] = value.strip()
    QueryOptions.validate_overrides(overrides, strict=True)
    return overrides


def run(args) -> int:
    try:
        questions = read_questions(args.batch)
        overrides = parse_overrides(args.set)
    except (OSError, ValueError) as exc:
        print(f"fieldguide retrieve: {exc}", file=sys.stderr)
        return 2

    from fieldguide.errors import FieldguideError
    from fieldguide.settings import get_settings
    from fieldguide.retrieval import open_resources, result_line, retrieve
    from graph.graph import build_retrieval_graph

    settings = get_settings()
    if args.collection:
        settings = settings.model_copy(update={"collection": args.collection})
    try:
        from fieldguide.labels import with_cli_labels

        settings = with_cli_labels(settings, args.label)
    except ValueError as exc:
        print(f"fieldguide retrieve: {exc}", file=sys.stderr)
        return 2
    try:
        with open_resources(settings, overrides.get("labels")) as resources:
            retrieval_graph = build_retrieval_graph()
            # Load every model before the first question, so no question pays for it.
            resources.warm_up(chat=False)
            out = sys.stdout
            for number, item in enumerate(questions, start=1):
                state, total_ms = retrieve(retrieval_graph, item["question"], resources, overrides)
                out.write(json.dumps(result_line(item.get("id", f"q-{number:03d}"), state, total_ms),
                                     ensure_ascii=False) + "\n")
                out.flush()
    except FieldguideError as exc:
        print(f"fieldguide retrieve: {exc}", file=sys.stderr)
        return 1
    return 0
