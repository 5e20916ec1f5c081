"""Retrieval and evidence (no generation) on several sets' questions and conversations, for tuning.

    python benchmarks/tune_sets.py --score SCORE_PY --answer-score ANSWER_SCORE_PY \
        --set COLLECTION=DIR [--set COLLECTION=DIR ...] [--grid NAME=V1,V2 ...] [--show]

Each DIR holds `questions.jsonl` and, optionally, `followups.jsonl`, ingested into COLLECTION
(`benchmarks/bench_sets.py --ingest` or `fieldguide ingest`). Models are loaded once; for every
setting of the grid, every question runs the retrieval graph and the evidence step, and every
conversation runs turn after turn in a thread of its own (so the second turn is condensed from
the first, as in `fieldguide ask`). Per set and setting one JSON line: score.py's facts_all and
section_mrr, facts_all on the `long_section` questions, and the share of those whose key facts
all land in the quoted evidence (`long_quoted`); for conversations, the second turns'
context_facts_all (answer_score.py's rule: headings and text) and the share quoted
(`turn2_quoted`); the median evidence time, and the median time from a single question to its
evidence (`evidence_ready_p50_ms`: retrieval and evidence, what the first token waits for; compare
two checkouts only when run side by side, in fresh processes: sentence vectors are cached). Then one `"set": "mean"` line: defaults are read
off that line, never off one set. `--show` prints each second turn and long-section question
that misses a fact: the standalone question, the context's sections and the facts not found.

It takes a minute or two per setting where `bench_sets.py` (whole answers) takes many: the
figures it prints are the retrieval and evidence ones the whole run would give, since the
generator changes neither.
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import statistics
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load_module(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def parse_grid(items: list[str]) -> dict[str, list]:
    grid = {}
    for item in items:
        name, _, values = item.partition("=")
        grid[name] = [json.loads(v) if v not in ("true", "false") else v == "true" for v in values.split(",")]
    return grid


def block_text(blocks: list[dict]) -> str:
    return "\n".join(" ".join(b.get("heading_path") or []) + "\n" + (b.get("text") or "") for b in blocks)


def run_turns(graph, resources, turns: list[str], overrides: dict) -> list[dict]:
    """The final states of one conversation's turns, asked in order in one thread."""
    from fieldguide.retrieval import run_config

    thread = f"tune-{uuid.uuid4().hex}"
    return [graph.invoke({"question": question}, run_config(resources, overrides, thread)) for question in turns]


def missing_facts(normalise, facts: list[str], text: str) -> list[str]:
    joined = normalise(text)
    return [f for f in facts if normalise(f) not in joined]


def describe(kind: str, item_id: str, state: dict, facts: list[str], missing: list[str]) -> str:
    sections = [f"{b['source']}#{' > '.join(b.get('heading_path') or [])[-60:]}"
                + (f" p{b.get('part_index')}/{b.get('part_count')}" if int(b.get("part_count") or 1) > 1 else "")
                for b in state.get("context") or []]
    return json.dumps({"kind": kind, "id": item_id, "standalone": state.get("standalone_question"),
                       "abstain": bool(state.get("abstain")), "missing": missing, "facts": facts,
                       "context": sections}, ensure_ascii=False)


def measure(score, answer_score, graph, resources, questions, followups, overrides, show) -> dict:
    from fieldguide.retrieval import result_line

    import time

    lines, long_quoted, evidence_ms, shown, ready_ms = [], [], [], [], []
    for q in questions:
        start = time.perf_counter()
        state = run_turns(graph, resources, [q["question"]], overrides)[0]
        ready_ms.append((time.perf_counter() - start) * 1000.0)
        lines.append(result_line(q["id"], state, 0.0))
        evidence_ms.append((state.get("timings_ms") or {}).get("evidence", 0.0))
        if q.get("long_section") and q.get("answerable", True):
            facts = q.get("key_facts") or []
            in_context = missing_facts(score.normalise, facts, "\n".join(b.get("text") or "" for b in
                                                                         state.get("context") or []))
            quoted = not state.get("abstain") and not missing_facts(answer_score.normalise, facts,
                                                                    state.get("evidence_markdown") or "")
            long_quoted.append(quoted)
            if show and (in_context or not quoted):
                shown.append(describe("long", q["id"], state, facts, in_context or ["(in context, not quoted)"]))
    table = score.score(questions, lines)
    long = [q for q in questions if q.get("long_section")]
    ids = {q["id"] for q in long}
    row = {"facts_all": table["facts_all"], "section_mrr": table["section_mrr"],
           "abstain_ok": table["abstain_ok"], "ctx_words": table["ctx_words"],
           "long_facts_all": score.score(long, [r for r in lines if r["id"] in ids])["facts_all"] if long else None,
           "long_quoted": round(sum(long_quoted) / len(long_quoted), 3) if long_quoted else None}
    context_ok, quoted_ok = [], []
    for conversation in followups:
        turns = conversation["turns"]
        states = run_turns(graph, resources, [t["question"] for t in turns], overrides)
        for k, (turn, state) in enumerate(zip(turns, states), start=1):
            evidence_ms.append((state.get("timings_ms") or {}).get("evidence", 0.0))
            if k != 2 or not turn.get("answerable", True):
                continue
            facts = turn.get("key_facts") or []
            missing = missing_facts(answer_score.normalise, facts, block_text(state.get("context") or []))
            context_ok.append(bool(facts) and not missing and not state.get("abstain"))
            quoted_ok.append(bool(facts) and not state.get("abstain") and not missing_facts(
                answer_score.normalise, facts, state.get("evidence_markdown") or ""))
            if show and (missing or state.get("abstain")):
                shown.append(describe("turn2", conversation["id"], state, facts, missing))
    if context_ok:
        row["turn2_context_facts_all"] = round(sum(context_ok) / len(context_ok), 3)
        row["turn2_quoted"] = round(sum(quoted_ok) / len(quoted_ok), 3)
    row["evidence_p50_ms"] = round(statistics.median(evidence_ms), 1) if evidence_ms else None
    # what the first token waits for: retrieval and the evidence, which generate streams first
    row["evidence_ready_p50_ms"] = round(statistics.median(ready_ms), 1) if ready_ms else None
    for line in shown:
        print(line, file=sys.stderr)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", required=True, metavar="COLLECTION=DIR", dest="sets")
    ap.add_argument("--score", required=True, help="path of score.py")
    ap.add_argument("--answer-score", required=True, help="path of answer_score.py")
    ap.add_argument("--grid", nargs="*", default=[])
    ap.add_argument("--show", action="store_true", help="print the misses to stderr")
    ap.add_argument("--followups-only", action="store_true", help="the conversations alone, no single questions")
    args = ap.parse_args(argv)

    from langgraph.checkpoint.memory import MemorySaver

    from fieldguide.retrieval import open_resources
    from fieldguide.settings import get_settings
    from graph.graph import RETRIEVAL_STEPS, _build
    from graph.state import QueryState
    from nodes.evidence import evidence

    score = load_module("score", args.score)
    answer_score = load_module("answer_score", args.answer_score)
    graph = _build(RETRIEVAL_STEPS + [("evidence", evidence)], MemorySaver(), "fieldguide-tune",
                   output_schema=QueryState)
    grid = parse_grid(args.grid)
    names = list(grid)
    sets = []
    for item in args.sets:
        collection, sep, folder = item.partition("=")
        if not sep:
            raise SystemExit(f"--set {item!r}: expected COLLECTION=DIR")
        folder = Path(folder)
        followups = folder / "followups.jsonl"
        sets.append((collection, [] if args.followups_only else load_jsonl(folder / "questions.jsonl"),
                     load_jsonl(followups) if followups.exists() else []))
    opened = []
    try:
        for collection, _, _ in sets:
            resources = open_resources(get_settings().model_copy(update={"collection": collection})).__enter__()
            opened.append(resources)
            resources.warm_up(chat=False)
        for values in itertools.product(*(grid[n] for n in names)) if names else [()]:
            overrides = dict(zip(names, values))
            rows = []
            for (collection, questions, followups), resources in zip(sets, opened):
                row = measure(score, answer_score, graph, resources, questions, followups, overrides, args.show)
                rows.append(row)
                print(json.dumps({"set": collection, "options": overrides, **row}), flush=True)
            if len(rows) > 1:
                mean = {}
                for key in rows[0]:
                    values_ = [r.get(key) for r in rows if isinstance(r.get(key), (int, float))]
                    mean[key] = round(statistics.mean(values_), 3) if values_ else None
                for key in ("turn2_context_facts_all", "turn2_quoted"):
                    values_ = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
                    mean[key] = round(statistics.mean(values_), 3) if values_ else None
                print(json.dumps({"set": "mean", "options": overrides, **mean}), flush=True)
    finally:
        for resources in opened:
            resources.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
