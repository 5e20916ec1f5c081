"""`fieldguide ask "QUESTION" [--json]`: stream a cited, checked answer, then its sources.

`fieldguide ask --batch FILE.jsonl` answers a file of questions, or of conversations
(`{"id", "turns": [{"question"}, ...]}`, asked in order in one conversation), and prints one
answer line per question or per turn (docs/architecture.md, "Records and lines").
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HELP = ("Ask one question: the cited answer streams to the terminal, then its sources (--json: the final "
        "state); --batch FILE.jsonl prints one answer line per question or conversation turn.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", nargs="?", help="the question, in quotes")
    parser.add_argument("--batch", type=Path, metavar="FILE.jsonl",
                        help='JSON Lines of {"id", "question"} or {"id", "turns": [{"question"}, ...]}')
    parser.add_argument("--json", action="store_true", help="print the final state as JSON instead of streaming")
    from fieldguide.labels import add_label_argument

    add_label_argument(parser, "the question")
    parser.add_argument("--collection", help="Weaviate collection (default FIELDGUIDE_COLLECTION)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="per-request option, e.g. --set verify=flag or --set max_chunks=3 (repeatable)")


def format_sources(context: list[dict], citations: list[dict] | None = None) -> list[str]:
    """The sources list: cited blocks with their number and link, then the other sections read."""
    from fieldguide.headings import breadcrumb

    lines, seen = [], set()
    for citation in citations or []:
        section = breadcrumb(citation["heading_path"], page_title=citation.get("page_title")) or "(intro)"
        lines.append(f"  [{citation['n']}] {citation['source']}: {section} ({citation['url']})")
        seen.add((citation["source"], tuple(citation["heading_path"])))
    for block in context:
        key = (block["source"], tuple(block["heading_path"]))
        if key in seen:
            continue
        seen.add(key)
        section = breadcrumb(block["heading_path"], page_title=block.get("page_title")) or "(intro)"
        lines.append(f"  - {block['source']}: {section}")
    return lines


def _fail(message: str, status: int = 2) -> int:
    print(f"fieldguide ask: {message}", file=sys.stderr)
    return status


def _checked_questions(items: list[dict], limit: int) -> str | None:
    """Why a batch cannot run (a question over the length limit), or None."""
    for number, item in enumerate(items, start=1):
        for turn in item.get("turns") or [item]:
            if len(" ".join(str(turn["question"]).split())) > limit:
                return f"question {number} ({item.get('id', '?')}) is longer than {limit} characters"
    return None


def run(args) -> int:
    from fieldguide.commands.retrieve import parse_overrides, read_questions
    from fieldguide.errors import FieldguideError
    from fieldguide.settings import get_settings

    settings = get_settings()
    if (args.question is None) == (args.batch is None):
        return _fail("give either a question or --batch FILE.jsonl")
    try:
        overrides = parse_overrides(args.set)
        items = read_questions(args.batch, conversations=True) if args.batch else None
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    if args.collection:
        settings = settings.model_copy(update={"collection": args.collection})
    try:
        from fieldguide.labels import with_cli_labels

        settings = with_cli_labels(settings, args.label)
    except ValueError as exc:
        return _fail(str(exc))
    if items is not None:
        problem = _checked_questions(items, settings.max_question_chars)
        if problem:
            return _fail(problem)
        try:
            return run_batch(items, settings, overrides)
        except FieldguideError as exc:
            return _fail(str(exc), 1)

    question = " ".join(args.question.split())
    if not question:
        return _fail("the question is empty")
    if len(question) > settings.max_question_chars:
        return _fail(f"the question is longer than {settings.max_question_chars} characters")

    return _ask(args, question, settings, overrides)


def _ask(args, question: str, settings, overrides: dict) -> int:
    """Answer one question: streamed to stdout with its sources, or (--json) printed as one state."""
    import asyncio

    from fieldguide.errors import FieldguideError
    from fieldguide.retrieval import open_resources, stream_answer
    from graph.graph import build_graph

    async def main() -> dict:
        final: dict = {}
        streamed = False
        with open_resources(settings, overrides.get("labels")) as resources:
            resources.start_chat_model()  # the local model's process loads while retrieval runs
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

                final["index_version"] = index_version(resources.store.index_files()) or None
        if not args.json:
            if not streamed:
                sys.stdout.write(final.get("answer", ""))
            sys.stdout.write("\n")
            if any(s.get("flagged") for s in final.get("sentences") or []):
                sys.stdout.write("\n⚠ marks a sentence the documentation does not support.\n")
            sources = format_sources(final.get("context") or [], final.get("citations"))
            if sources:
                sys.stdout.write("\nSources:\n" + "\n".join(sources) + "\n")
        return final

    try:
        final = asyncio.run(main())
    except FieldguideError as exc:
        return _fail(str(exc), 1)
    if args.json:
        print(json.dumps(_json_state(question, final), ensure_ascii=False, indent=2))
    return 0


def _json_state(question: str, final: dict) -> dict:
    """What --json prints of an answer: its result line, coverage, answer, citations, sentences, timings."""
    from fieldguide.retrieval import coverage_of, result_line

    line = result_line(None, final, final.get("total_ms", 0.0))
    timings = dict(final.get("timings_ms") or {})
    timings["first_token"] = round(final.get("first_token_ms", 0.0), 3)
    timings["total"] = round(final.get("total_ms", 0.0), 3)
    state = {
        "question": question,
        "standalone_question": final.get("standalone_question") or question,
        **{k: v for k, v in line.items() if k != "id"},
        "coverage": coverage_of(final),
        "coverage_reason": final.get("coverage_reason") or "",
        "intent_confidence": final.get("intent_confidence"),
        "answer": final.get("answer", ""),
        "citations": final.get("citations") or [],
        "sentences": final.get("sentences") or [],
        "index_version": final.get("index_version"),
        "nearest": final.get("nearest") or [],
        "timings_ms": timings,
    }
    return state


def run_batch(items: list[dict], settings, overrides: dict) -> int:
    """One answer line per question or turn, written as each is answered."""
    import asyncio

    from langgraph.checkpoint.memory import MemorySaver

    from fieldguide.retrieval import answer_batch, open_resources
    from graph.graph import build_graph

    async def main() -> int:
        failed = 0
        with open_resources(settings, overrides.get("labels")) as resources:
            resources.warm_up()  # no question pays for loading a model
            async for line in answer_batch(build_graph(MemorySaver()), items, resources, overrides):
                if "error" in line:  # written too, so a reader of the lines sees which item failed
                    failed += 1
                    print(f"fieldguide ask: {line['id']}: {line['error']}", file=sys.stderr)
                sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
                sys.stdout.flush()
        return failed

    failed = asyncio.run(main())
    if failed:
        print(f"fieldguide ask: {failed} question(s) could not be answered (their lines carry an \"error\")",
              file=sys.stderr)
    return 1 if failed else 0
