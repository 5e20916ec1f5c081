"""`fieldguide eval --docs DIR --questions Q.jsonl [--docs DIR2 --questions Q2.jsonl ...] [--collection NAME ...]
[--out DIR] [--ablate] [--subset N] [--answers] [--conversations C.jsonl ...]
[--compare BASELINE_REPORT.json [--tolerance N]]`."""
from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("Score retrieval on one or more question sets against two naive baselines (and, with --ablate, the "
        "pipeline with each stage switched off); prints the tables of each corpus and their mean, writes "
        "report.json and a chart per corpus.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--docs", required=True, type=Path, metavar="DIR", action="append",
                        help="folder of Markdown files (repeat, with one --questions each, for several corpora)")
    parser.add_argument("--questions", required=True, type=Path, metavar="Q.jsonl", action="append",
                        help="question set: id, question, intent, answerable, gold_file, gold_heading_path, key_facts")
    parser.add_argument("--collection", metavar="NAME", action="append",
                        help="Weaviate collection to ingest into and query, one per --docs "
                             "(default: one named after each DIR)")
    parser.add_argument("--out", type=Path, default=Path("eval-out"), metavar="DIR",
                        help="where report.json, eval.png and the result lines go (default ./eval-out; "
                             "one sub-folder per corpus when there are several)")
    parser.add_argument("--ablate", action="store_true",
                        help="also run the pipeline with each stage switched off in turn")
    parser.add_argument("--subset", type=int, metavar="N", help="only N questions, taken in turn from each intent")
    parser.add_argument("--no-baselines", action="store_true", help="skip the two naive baselines")
    parser.add_argument("--answers", action="store_true",
                        help="also answer every question (the whole pipeline) and print the answer table")
    parser.add_argument("--conversations", type=Path, metavar="C.jsonl", action="append",
                        help='conversations to answer turn by turn ({"id", "turns": [...]}), one per --docs '
                             '(with several corpora, in their order); implies --answers')
    parser.add_argument("--compare", type=Path, metavar="BASELINE_REPORT.json",
                        help="after a docs change: re-run the questions (no baselines) and show which changed context, "
                             "facts, citations or abstention, and which regressed, against this earlier report.json; "
                             "exit 1 when more regressed than --tolerance")
    parser.add_argument("--tolerance", type=int, default=0, metavar="N",
                        help="questions allowed to regress before --compare fails (default 0)")


def read_question_set(path: Path) -> list[dict]:
    from fieldguide.evaluation.metrics import read_jsonl

    questions = read_jsonl(path)
    if not questions or any("id" not in q or "question" not in q for q in questions):
        raise ValueError("every line needs an \"id\" and a \"question\"")
    return questions


def run(args) -> int:
    inputs = _checked_inputs(args)
    if inputs is None:
        return 2
    corpora, baseline, conversation_sets = inputs
    return _evaluate(args, corpora, baseline, conversation_sets)


def _checked_inputs(args):
    """(corpora, baseline, conversation sets) read from the arguments, or None when one is wrong
    (said on stderr): each corpus (docs, questions path, questions), the --compare report or None."""
    import sys

    if len(args.docs) != len(args.questions):
        print(f"fieldguide eval: {len(args.docs)} --docs but {len(args.questions)} --questions: give one question "
              "set per docs folder", file=sys.stderr)
        return None
    if args.collection and len(args.collection) != len(args.docs):
        print(f"fieldguide eval: {len(args.collection)} --collection for {len(args.docs)} --docs: give one per "
              "docs folder, or none", file=sys.stderr)
        return None
    baseline = None
    if args.compare is not None:
        from fieldguide.evaluation.compare import read_baseline

        if len(args.docs) != 1:
            print("fieldguide eval: --compare takes one --docs and one --questions", file=sys.stderr)
            return None
        if args.tolerance < 0:
            print("fieldguide eval: --tolerance must be 0 or more", file=sys.stderr)
            return None
        try:
            baseline = read_baseline(args.compare)
        except ValueError as exc:
            print(f"fieldguide eval: --compare: {exc}", file=sys.stderr)
            return None
    corpora = []
    for docs, questions_path in zip(args.docs, args.questions):
        if not docs.is_dir():
            print(f"fieldguide eval: {docs} is not a directory", file=sys.stderr)
            return None
        try:
            corpora.append((docs, questions_path, read_question_set(questions_path)))
        except (OSError, ValueError) as exc:
            print(f"fieldguide eval: {questions_path}: {exc}", file=sys.stderr)
            return None
    conversation_files = args.conversations or []
    if conversation_files and len(conversation_files) != len(args.docs):
        print(f"fieldguide eval: {len(conversation_files)} --conversations for {len(args.docs)} --docs: give one "
              "per docs folder, or none", file=sys.stderr)
        return None
    conversation_sets = []
    for path in conversation_files:
        try:
            from fieldguide.commands.retrieve import read_questions

            conversations = [c for c in read_questions(path, conversations=True) if "turns" in c]
            if not conversations:
                raise ValueError("no conversation (a line with \"turns\") in the file")
        except (OSError, ValueError) as exc:
            print(f"fieldguide eval: {path}: {exc}", file=sys.stderr)
            return None
        conversation_sets.append(conversations)
    return corpora, baseline, conversation_sets


def _evaluate(args, corpora, baseline, conversation_sets) -> int:
    """Evaluate each corpus and print its tables (or, with --compare, the comparison), then the mean."""
    import os
    import sys

    from fieldguide.errors import FieldguideError
    from fieldguide.evaluation.compare import (RECORDS_VERSION, compare_records, comparison, question_records,
                                               render_table, summary_line)
    from fieldguide.evaluation.report import answer_table, slice_tables
    from fieldguide.evaluation.runner import (PIPELINE, auto_collection, corpus_label, evaluate, subset_questions,
                                              system_order, write_outputs)
    from fieldguide.settings import get_settings

    log = lambda message: print(message, file=sys.stderr)  # noqa: E731
    several = len(corpora) > 1
    labels = corpus_label([docs for docs, _, _ in corpora])
    results = {}
    for index, (docs, questions_path, questions) in enumerate(corpora):
        questions = subset_questions(questions, args.subset)
        collection = args.collection[index] if args.collection else auto_collection(docs)
        settings = get_settings().model_copy(update={"collection": collection})
        try:
            run_ = evaluate(docs, questions, settings, ablate=args.ablate and baseline is None,
                            baselines=not args.no_baselines and baseline is None,
                            answers=args.answers or bool(conversation_sets),
                            conversations=conversation_sets[index] if conversation_sets else [], log=log)
        except FieldguideError as exc:
            print(f"fieldguide eval: {exc}", file=sys.stderr)
            return 1
        question_ids = {q["id"] for q in questions}
        answers = [line for line in run_.answers if line.get("id") in question_ids] if run_.answers else None
        records = question_records(questions, run_.results[PIPELINE], answers)
        meta = {"cpus": os.cpu_count(), "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
                "docs": f"{docs.resolve().parent.name}/{docs.name}", "questions_file": questions_path.name,
                "questions": len(questions), "subset": args.subset, "ablate": args.ablate,
                "records_version": RECORDS_VERSION, "question_records": records}
        out = args.out / labels[index] if several else args.out
        if baseline is not None:
            rows = compare_records(baseline, records)
            meta["comparison"] = comparison(rows, args.tolerance)
        paths = write_outputs(run_, out, meta)
        if baseline is not None:
            line, failed = summary_line(rows, args.tolerance)
            print(render_table(rows))
            print(line)
            print(f"wrote {paths['report']} (use it as the next baseline)")
            return 1 if failed else 0
        results[labels[index]] = run_
        if several:
            print(f"\n######## {labels[index]} ({docs})\n")
        print(slice_tables(run_.scores, system_order(run_)))
        if run_.answer_scores:
            print("\n" + answer_table(run_.answer_scores))
        seconds = run_.facts["seconds"]
        print(f"\n{len(questions)} questions; seconds: " + ", ".join(f"{k} {v}" for k, v in seconds.items())
              + f"; total {sum(seconds.values()):.1f}")
        print(f"wrote {paths['report']}, {paths['chart']} and {paths['results']}/*.jsonl")
    if several:
        _write_mean(args, results)
    return 0


def _write_mean(args, results) -> None:
    """The mean table over several corpora, printed and written to mean.json."""
    import json

    from fieldguide.evaluation.report import mean_table
    from fieldguide.evaluation.runner import system_order

    table, mean = mean_table({label: run_.scores for label, run_ in results.items()},
                             {label: system_order(run_) for label, run_ in results.items()})
    print(f"\n######## mean over {len(results)} corpora (all questions of each, every corpus weighted alike)\n")
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "mean.json").write_text(json.dumps({"corpora": list(results), "mean": mean}, indent=2) + "\n",
                                        encoding="utf-8")
    print(f"wrote {args.out / 'mean.json'}")
