"""`fieldguide eval --docs DIR --questions Q.jsonl [--collection NAME] [--out DIR] [--ablate] [--subset N]
[--answers] [--conversations C.jsonl]`."""
from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("Score retrieval on a question set against two naive baselines (and, with --ablate, the pipeline "
        "with each stage switched off); prints the tables, writes report.json and a chart.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--docs", required=True, type=Path, metavar="DIR", help="folder of Markdown files")
    parser.add_argument("--questions", required=True, type=Path, metavar="Q.jsonl",
                        help="question set: id, question, intent, answerable, gold_file, gold_heading_path, key_facts")
    parser.add_argument("--collection", metavar="NAME",
                        help="Weaviate collection to ingest into and query (default: one named after DIR)")
    parser.add_argument("--out", type=Path, default=Path("eval-out"), metavar="DIR",
                        help="where report.json, eval.png and the result lines go (default ./eval-out)")
    parser.add_argument("--ablate", action="store_true",
                        help="also run the pipeline with each stage switched off in turn")
    parser.add_argument("--subset", type=int, metavar="N", help="only N questions, taken in turn from each intent")
    parser.add_argument("--no-baselines", action="store_true", help="skip the two naive baselines")
    parser.add_argument("--answers", action="store_true",
                        help="also answer every question (the whole pipeline) and print the answer table")
    parser.add_argument("--conversations", type=Path, metavar="C.jsonl",
                        help='conversations to answer turn by turn ({"id", "turns": [...]}); implies --answers')


def run(args) -> int:
    import os
    import sys

    if not args.docs.is_dir():
        print(f"fieldguide eval: {args.docs} is not a directory", file=sys.stderr)
        return 2
    try:
        from fieldguide.evaluation.metrics import read_jsonl

        questions = read_jsonl(args.questions)
        if not questions or any("id" not in q or "question" not in q for q in questions):
            raise ValueError("every line needs an \"id\" and a \"question\"")
    except (OSError, ValueError) as exc:
        print(f"fieldguide eval: {args.questions}: {exc}", file=sys.stderr)
        return 2

    from fieldguide.errors import FieldguideError
    from fieldguide.evaluation.report import answer_table, slice_tables
    from fieldguide.evaluation.runner import auto_collection, evaluate, subset_questions, system_order, write_outputs
    from fieldguide.settings import get_settings

    conversations = []
    if args.conversations:
        try:
            from fieldguide.commands.retrieve import read_questions

            conversations = [c for c in read_questions(args.conversations, conversations=True) if "turns" in c]
            if not conversations:
                raise ValueError("no conversation (a line with \"turns\") in the file")
        except (OSError, ValueError) as exc:
            print(f"fieldguide eval: {args.conversations}: {exc}", file=sys.stderr)
            return 2
    questions = subset_questions(questions, args.subset)
    settings = get_settings().model_copy(update={"collection": args.collection or auto_collection(args.docs)})
    log = lambda message: print(message, file=sys.stderr)  # noqa: E731
    try:
        run_ = evaluate(args.docs, questions, settings, ablate=args.ablate, baselines=not args.no_baselines,
                        answers=args.answers, conversations=conversations, log=log)
    except FieldguideError as exc:
        print(f"fieldguide eval: {exc}", file=sys.stderr)
        return 1
    meta = {"cpus": os.cpu_count(), "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "docs": f"{args.docs.resolve().parent.name}/{args.docs.name}", "questions_file": args.questions.name, "questions": len(questions),
            "subset": args.subset, "ablate": args.ablate}
    paths = write_outputs(run_, args.out, meta)
    print(slice_tables(run_.scores, system_order(run_)))
    if run_.answer_scores:
        print("\n" + answer_table(run_.answer_scores))
    seconds = run_.facts["seconds"]
    print(f"\n{len(questions)} questions; seconds: " + ", ".join(f"{k} {v}" for k, v in seconds.items())
          + f"; total {sum(seconds.values()):.1f}")
    print(f"wrote {paths['report']}, {paths['chart']} and {paths['results']}/*.jsonl")
    return 0
