"""Retrieval and answers on several documentation sets, each in its own collection, and their mean.

    python benchmarks/bench_sets.py --score SCORE_PY --answer-score ANSWER_SCORE_PY --out OUT \
        --set NAME=DIR [--set NAME=DIR ...] [--ingest] [--no-answers] [--option NAME=VALUE ...]

DIR holds `docs/`, `questions.jsonl` and, optionally, `followups.jsonl` (two-turn conversations).
Each set goes into the collection `Bench<Name>` (`--ingest` ingests it first). The real commands
run: `fieldguide retrieve --batch` on the questions, scored with score.py (also on the questions
marked `long_section`), and `fieldguide ask --batch` on the questions and the conversations, scored
with answer_score.py (the questions alone, and the conversations' second turns alone). The result
and answer lines are kept under OUT, named after the set. One JSON line per set is printed, then
one `"set": "mean"` line with the mean of the sets, each weighted alike: defaults are read off that
line, never off one set. `--option` is passed to both commands as `--set NAME=VALUE`.
Answers cost a generation each: `--answer-questions long` answers only the `long_section`
questions (retrieval still runs on all), and `--followup-sets NAME,...` asks the conversations of
the named sets only.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RETRIEVAL = ("facts_all", "section_mrr", "false_abstain", "abstain_ok", "ctx_words", "p50_ms")
ANSWERS = ("answer_facts_all", "context_facts_all", "carry", "invented", "cited", "answer_words", "first_token_ms")


def load_module(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def collection_name(name: str) -> str:
    """A Weaviate class name for a set: `Bench` and the set's name in CamelCase letters and digits."""
    return "Bench" + "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", name) if part)


def fieldguide(*args: str, out: Path | None = None, lines: int | None = None) -> None:
    """Runs one fieldguide command of this checkout; its stdout goes to `out`. A command that fails
    after writing all `lines` of its output (a crash while the process exits) is reported and its
    output kept."""
    command = [sys.executable, "-m", "fieldguide.cli", *args]
    with (out.open("w", encoding="utf-8") if out else open(Path("/dev/null"), "w")) as sink:
        done = subprocess.run(command, stdout=sink, cwd=ROOT)
    if done.returncode != 0:
        written = len(load_jsonl(out)) if out and lines is not None else -1
        if written != lines:
            raise SystemExit(f"{' '.join(args[:2])} failed with status {done.returncode}")
        print(f"{' '.join(args[:2])} exited with status {done.returncode} after writing all {lines} lines",
              file=sys.stderr)


def retrieval_figures(score, questions: list[dict], lines: list[dict]) -> dict:
    table = score.score(questions, lines)
    figures = {k: table[k] for k in RETRIEVAL}
    long = [q for q in questions if q.get("long_section")]
    ids = {q["id"] for q in long}
    figures["long_facts_all"] = score.score(long, [r for r in lines if r["id"] in ids])["facts_all"] if long else None
    figures["long_n"] = len(long)
    return figures


def answer_figures(answer_score, questions: list[dict], followups: list[dict], lines: list[dict]) -> dict:
    answers = {a["id"]: a for a in lines if "id" in a}
    single = answer_score.score(answer_score.expand(questions), answers)
    figures = {k: single[k] for k in ANSWERS}
    first = [a["timings_ms"]["first_token"] for a in lines if (a.get("timings_ms") or {}).get("first_token")]
    figures["first_token_ms"] = round(statistics.median(first), 1) if first else None  # every answered line
    long = [q for q in questions if q.get("long_section")]
    figures["long_answer_facts_all"] = answer_score.score(answer_score.expand(long), answers)["answer_facts_all"] \
        if long else None
    if followups:
        second = [t for t in answer_score.expand(followups) if t["turn"] == 2]
        turn2 = answer_score.score(second, answers)
        figures.update({"turn2_context_facts_all": turn2["context_facts_all"],
                        "turn2_answer_facts_all": turn2["answer_facts_all"], "turn2_n": len(second)})
    return figures


def mean_line(rows: list[dict]) -> dict:
    keys = [k for k in rows[0] if k != "set"]
    mean = {"set": "mean"}
    for key in keys:
        values = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
        mean[key] = round(statistics.mean(values), 3) if values else None
    return mean


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", required=True, metavar="NAME=DIR", dest="sets")
    ap.add_argument("--score", required=True, help="path of score.py")
    ap.add_argument("--answer-score", required=True, help="path of answer_score.py")
    ap.add_argument("--out", required=True, type=Path, help="folder for the result and answer lines")
    ap.add_argument("--ingest", action="store_true", help="ingest each set into its collection first")
    ap.add_argument("--no-answers", action="store_true", help="retrieval only")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--answer-questions", choices=("all", "long"), default="all",
                    help="which single questions are answered (long: the long_section ones)")
    ap.add_argument("--followup-sets", help="comma-separated set names whose conversations are asked (default: all)")
    args = ap.parse_args(argv)
    score = load_module("score", args.score)
    answer_score = load_module("answer_score", args.answer_score)
    args.out.mkdir(parents=True, exist_ok=True)
    options = [arg for pair in args.option for arg in ("--set", pair)]
    rows = []
    for item in args.sets:
        name, sep, folder = item.partition("=")
        if not sep:
            raise SystemExit(f"--set {item!r}: expected NAME=DIR")
        folder = Path(folder)
        collection = collection_name(name)
        if args.ingest:
            fieldguide("ingest", str(folder / "docs"), "--collection", collection)
        questions = load_jsonl(folder / "questions.jsonl")
        followups = load_jsonl(folder / "followups.jsonl") if (folder / "followups.jsonl").exists() else []
        if args.followup_sets is not None and name not in args.followup_sets.split(","):
            followups = []
        results = args.out / f"{name}.retrieve.jsonl"
        fieldguide("retrieve", "--batch", str(folder / "questions.jsonl"), "--collection", collection, *options,
                   out=results)
        row = {"set": name, **retrieval_figures(score, questions, load_jsonl(results))}
        if not args.no_answers:
            answered = [q for q in questions if args.answer_questions == "all" or q.get("long_section")]
            asked = args.out / f"{name}.ask-input.jsonl"
            asked.write_text("".join(json.dumps(q) + "\n" for q in answered + followups), encoding="utf-8")
            answers = args.out / f"{name}.answers.jsonl"
            turns = len(answered) + sum(len(c["turns"]) for c in followups)
            fieldguide("ask", "--batch", str(asked), "--collection", collection, *options, out=answers, lines=turns)
            row.update(answer_figures(answer_score, answered, followups, load_jsonl(answers)))
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps(mean_line(rows)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
