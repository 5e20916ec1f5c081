"""Retrieval latency of this checkout against another one (an earlier commit), interleaved in one run.

    python benchmarks/bench_retrieval_against.py --other ../base-checkout \
        --questions QUESTIONS.jsonl --collection NAME --other-collection NAME [--passes 3]

Two worker processes, one per checkout (its own code on the path, its own collection, every
model loaded before the first question), answer the same questions in lockstep: question 1
by this, then by the other; question 2 by the other, then by this; and so on, over `--passes`
passes of the question set. The machine's load therefore falls on both alike, question by
question. It prints the median `timings_ms.total` of each and their ratio, the same for the
time outside the embedding call (total − embed: what the pipeline's own steps cost, which
changes between commits, while the embedding call is the same model on the same text), and the
load average. Only ratios measured in one run mean anything.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()


def worker(collection: str) -> None:
    """Answer question lines from stdin with result lines on stdout (runs inside either checkout)."""
    from fieldguide.retrieval import open_resources, result_line, retrieve
    from fieldguide.settings import get_settings
    from graph.graph import build_retrieval_graph

    settings = get_settings().model_copy(update={"collection": collection})
    with open_resources(settings) as resources:
        graph = build_retrieval_graph()
        resources.warm_up(chat=False)
        retrieve(graph, "warm up", resources)
        print("ready", flush=True)
        for line in sys.stdin:
            item = json.loads(line)
            state, total = retrieve(graph, item["question"], resources)
            print(json.dumps(result_line(item["id"], state, total)), flush=True)


def start(tree: Path, collection: str, python: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(tree))
    process = subprocess.Popen([python, str(HERE), "--worker", "--collection", collection], cwd=tree, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if process.stdout.readline().strip() != "ready":
        raise SystemExit(f"{tree}: the worker did not start")
    return process


def ask(process: subprocess.Popen, item: dict) -> dict:
    process.stdin.write(json.dumps({"id": item["id"], "question": item["question"]}) + "\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--other", type=Path, help="the other checkout (e.g. a worktree of an earlier commit)")
    ap.add_argument("--questions")
    ap.add_argument("--collection", required=True, help="this checkout's collection")
    ap.add_argument("--other-collection", help="the other checkout's collection")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    if args.worker:
        worker(args.collection)
        return
    if not (args.other and args.questions and args.other_collection):
        ap.error("--other, --questions and --other-collection are required")

    questions = [json.loads(line) for line in open(args.questions, encoding="utf-8") if line.strip()]
    workers = {"this": start(HERE.parents[1], args.collection, args.python),
               "other": start(args.other.resolve(), args.other_collection, args.python)}
    lines: dict[str, list[dict]] = {"this": [], "other": []}
    try:
        turn = 0
        for _ in range(args.passes):
            for item in questions:
                order = ["this", "other"] if turn % 2 == 0 else ["other", "this"]
                turn += 1
                for name in order:
                    lines[name].append(ask(workers[name], item))
    finally:
        for process in workers.values():
            process.stdin.close()
            process.wait(timeout=60)

    def median(name: str, outside_embedding: bool = False) -> float:
        return statistics.median(line["timings_ms"]["total"] - (line["timings_ms"].get("embed", 0.0)
                                                                 if outside_embedding else 0.0)
                                 for line in lines[name])

    total = {name: median(name) for name in lines}
    rest = {name: median(name, True) for name in lines}
    print(json.dumps({
        "questions": len(questions), "passes": args.passes,
        "this_p50_ms": round(total["this"], 2), "other_p50_ms": round(total["other"], 2),
        "ratio": round(total["this"] / total["other"], 3),
        "this_outside_embed_p50_ms": round(rest["this"], 2), "other_outside_embed_p50_ms": round(rest["other"], 2),
        "outside_embed_ratio": round(rest["this"] / rest["other"], 3),
        "load_average": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
