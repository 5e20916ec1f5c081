"""Retrieval latency of this checkout against another one (an earlier commit), alternately in one run.

    python benchmarks/bench_retrieval_against.py --other ../base-checkout \
        --questions QUESTIONS.jsonl --collection NAME --other-collection NAME [--rounds 3]

Both checkouts answer the same questions with `fieldguide retrieve --batch` (each in its own
process, models loaded before the first question), over a collection each has ingested
itself, in turns: this, other, other, this, ... so that the machine's load falls on both
alike. Per round it prints the median `timings_ms.total` of each and their ratio, and at the
end the median ratio with the load average. Only ratios measured in one run mean anything.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def run_batch(tree: Path, questions: str, collection: str, python: str) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([python, "-m", "fieldguide.cli", "retrieve", "--batch", questions,
                           "--collection", collection], cwd=tree, env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: retrieve failed: {done.stderr[-2000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def median_of(lines: list[dict], *keys: str) -> float:
    return statistics.median(sum(line["timings_ms"].get(k, 0.0) for k in keys) for line in lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--other", required=True, type=Path, help="the other checkout (e.g. a worktree of an earlier commit)")
    ap.add_argument("--questions", required=True)
    ap.add_argument("--collection", required=True, help="this checkout's collection")
    ap.add_argument("--other-collection", required=True, help="the other checkout's collection")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()

    ratios = []
    for number in range(1, args.rounds + 1):
        order = [("this", HERE, args.collection), ("other", args.other.resolve(), args.other_collection)]
        if number % 2 == 0:
            order.reverse()
        medians = {}
        for name, tree, collection in order:
            lines = run_batch(tree, args.questions, collection, args.python)
            medians[name] = (median_of(lines, "total"), median_of(lines, "embed", "search", "rerank"))
        ratio = medians["this"][0] / medians["other"][0]
        ratios.append(ratio)
        print(json.dumps({"round": number, "this_p50_ms": round(medians["this"][0], 2),
                          "other_p50_ms": round(medians["other"][0], 2), "ratio": round(ratio, 3),
                          "this_model_p50_ms": round(medians["this"][1], 2),
                          "other_model_p50_ms": round(medians["other"][1], 2),
                          "load_average": [round(x, 2) for x in os.getloadavg()]}), flush=True)
    print(json.dumps({"median_ratio": round(statistics.median(ratios), 3), "rounds": args.rounds,
                      "load_average": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
