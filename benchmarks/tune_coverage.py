"""The coverage verdict, measured on question sets without generating anything.

    # 1. what the verdict reads, per turn (the whole graph runs with a model that says nothing:
    #    retrieval, evidence and coverage are the pipeline's own; follow-ups are condensed by the rules);
    #    --answers also writes the answer lines (quotes and partial preface) for answer_score.py
    python benchmarks/tune_coverage.py collect --collection NAME [--answers ANSWERS.jsonl] QUESTIONS.jsonl \
        [MORE.jsonl ...] > signals.jsonl
    # 2. the verdict's figures per file and their mean (honest_ok, false_flag, false_abstain), as
    #    shared/eval/answer_score.py counts them
    python benchmarks/tune_coverage.py score signals-a.jsonl signals-b.jsonl ... [--grid]

`score` re-runs `nodes.coverage.verdict` on the stored signals, so a change of the rules is
judged in a second; `--grid` tries each threshold around its default and prints the mean over
the files, the figure the defaults are chosen by (docs/BENCHMARKS.md, "Coverage"). Signals
are read from the graph's state (`coverage_signals`), which no output line carries.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load_jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def items_of(path: str) -> list[dict]:
    """Single questions and conversation turns (ids "C#k"), as the answer scorer expands them."""
    items = []
    for q in load_jsonl(path):
        turns = q["turns"] if "turns" in q else [q]
        for k, turn in enumerate(turns, 1):
            items.append({"id": f"{q['id']}#{k}" if "turns" in q else q["id"], "conversation": q["id"],
                          "question": turn["question"], "answerable": turn.get("answerable", True)})
    return items


async def collect(paths: list[str], settings, answers: str | None = None) -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import MemorySaver

    from fieldguide.retrieval import open_resources, run_config
    from graph.graph import ANSWER_STEPS, RETRIEVAL_STEPS, _build
    from graph.state import QueryState

    class Silent(GenericFakeChatModel):
        """A chat model that says nothing at once: the answer is the quoted evidence."""

    from fieldguide.retrieval import answer_line

    from nodes.coverage import MEASURING

    MEASURING["near_always"] = True  # every turn's `near`, so that `score` can replay other weights
    graph = _build(RETRIEVAL_STEPS + ANSWER_STEPS, MemorySaver(), "tune-coverage", output_schema=QueryState)
    lines = open(answers, "w", encoding="utf-8") if answers else None
    with open_resources(settings) as resources:
        resources._chat_model = Silent(messages=iter(AIMessage(" ") for _ in iter(int, 1)))
        for path in paths:
            threads: dict[str, str] = {}
            for item in items_of(path):
                thread = threads.setdefault(item["conversation"], f"tune-{uuid.uuid4().hex}")
                state = await graph.ainvoke({"question": item["question"]}, run_config(resources, {}, thread))
                print(json.dumps({"file": path, "id": item["id"], "answerable": item["answerable"],
                                  "question": item["question"],
                                  "standalone_question": state.get("standalone_question"),
                                  "abstain": bool(state.get("abstain")), "coverage": state.get("coverage"),
                                  "coverage_reason": state.get("coverage_reason"),
                                  "closest_only": state.get("closest_only") or "",
                                  "signals": state.get("coverage_signals") or {},
                                  "evidence": [u["text"] for u in state.get("evidence") or []]},
                                 ensure_ascii=False), flush=True)
                if lines:  # the answer line of this turn, as `ask --batch` writes it (the model said nothing)
                    lines.write(json.dumps(answer_line(item["id"], item["question"], state), ensure_ascii=False) + "\n")
                    lines.flush()
    if lines:
        lines.close()


def figures(rows: list[dict], decide) -> dict:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    verdicts = {r["id"]: decide(r) for r in rows}

    def share(values):
        return round(sum(values) / len(values), 3) if values else None

    return {"turns": len(rows), "unanswerable": len(unanswerable),
            "honest_ok": share([verdicts[r["id"]] != "covered" for r in unanswerable]),
            "false_flag": share([verdicts[r["id"]] != "covered" for r in answerable]),
            "false_abstain": share([verdicts[r["id"]] == "not_covered" for r in answerable])}


def decider(overrides: dict | None = None):
    from nodes.coverage import NOT_COVERED, Signals, turn_verdict

    def decide(row: dict) -> str:
        if row["abstain"]:
            return NOT_COVERED
        known = {k: v for k, v in row["signals"].items() if k in Signals.__dataclass_fields__}  # older dumps
        return turn_verdict(Signals(**known), row.get("closest_only") or "", **(overrides or {}))[0]

    return decide


def mean_of(per_file: dict[str, dict], key: str) -> float | None:
    values = [f[key] for f in per_file.values() if f[key] is not None]
    return round(sum(values) / len(values), 3) if values else None


def score(paths: list[str], grid: bool) -> None:
    from nodes.coverage import THRESHOLDS

    files = {}
    for path in paths:
        for row in load_jsonl(path):
            files.setdefault(Path(path).stem, []).append(row)

    def table(overrides=None) -> dict:
        per_file = {name: figures(rows, decider(overrides)) for name, rows in files.items()}
        per_file["mean"] = {k: (mean_of(per_file, k) if k not in ("turns", "unanswerable") else None)
                            for k in ("turns", "unanswerable", "honest_ok", "false_flag", "false_abstain")}
        return per_file

    def abstention_only(row: dict) -> str:  # before the verdict: an answer was covered unless it abstained
        return "not_covered" if row["abstain"] else "covered"

    before = {name: figures(rows, abstention_only) for name, rows in files.items()}
    base = table()
    print("| file | turns | unanswerable | honest_ok before → after | false_flag before → after | false_abstain |")
    print("| --- | ---: | ---: | --- | --- | ---: |")
    for name, f in base.items():
        b = before.get(name) or {k: mean_of(before, k) for k in ("honest_ok", "false_flag")}
        print(f"| {name} | {f['turns'] or ''} | {f['unanswerable'] or ''} | {b['honest_ok']} → {f['honest_ok']} | "
              f"{b['false_flag']} → {f['false_flag']} | {f['false_abstain']} |")
    if grid:
        print("\n| threshold | value | mean honest_ok | min honest_ok | mean false_flag | max false_flag |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for name, default in THRESHOLDS.items():
            for factor in (0.5, 0.7, 0.85, 1.0, 1.15, 1.3, 1.6):
                value = round(default * factor, 4)
                t = table({name: value})
                honest = [f["honest_ok"] for k, f in t.items() if k != "mean" and f["honest_ok"] is not None]
                flags = [f["false_flag"] for k, f in t.items() if k != "mean" and f["false_flag"] is not None]
                print(f"| {name} | {value} | {t['mean']['honest_ok']} | {min(honest)} | {t['mean']['false_flag']} "
                      f"| {max(flags)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--collection", required=True)
    c.add_argument("--answers", metavar="FILE", help="also write each turn's answer line (the quotes, the partial "
                   "preface, no model sentences) for shared/eval/answer_score.py")
    c.add_argument("questions", nargs="+")
    s = sub.add_parser("score")
    s.add_argument("signals", nargs="+")
    s.add_argument("--grid", action="store_true")
    args = parser.parse_args()
    if args.command == "collect":
        from fieldguide.settings import get_settings

        settings = get_settings().model_copy(update={"collection": args.collection})
        asyncio.run(collect(args.questions, settings, args.answers))
    else:
        score(args.signals, args.grid)


if __name__ == "__main__":
    main()
