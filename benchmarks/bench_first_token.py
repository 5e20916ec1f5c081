"""Time to first token of this checkout against another one, measured alternately in one run.

    python benchmarks/bench_first_token.py --baseline PATH/TO/OTHER/CHECKOUT \\
        --questions questions.jsonl --collection NAME [--baseline-collection NAME2] [--n 12] [--rounds 2]
        [--set verify=drop]

Each checkout answers in a worker process of its own (its own code on `PYTHONPATH`, models
loaded and warmed up once, the same store; the same collection unless the other checkout
needs an index of its own, `--baseline-collection`, e.g. one built by an older chunker).
The driver hands every question to both workers in turn, alternating which goes first, so
both see the same machine load.
A worker reports, per question, the milliseconds from the start of the run to its first
token (the first text the reader sees: the quoted evidence), to the chat model's own first
token (LangGraph's `messages` stream of the generate node) and to its end; the driver prints the
medians and their ratios, with the load average.
Only answered questions count (an abstention streams no model token in every version).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worker(collection: str, overrides: dict) -> None:
    """Answer questions read from stdin, one JSON line each; write one timing line per question."""
    import asyncio

    from bench_peer import fieldguide_first_token  # this file's sibling, whichever checkout is timed
    from fieldguide.retrieval import open_resources
    from fieldguide.settings import get_settings
    from graph.graph import build_graph

    settings = get_settings().model_copy(update={"collection": collection})
    with open_resources(settings) as resources:
        resources.warm_up()
        graph = build_graph()

        async def one(question: str) -> dict:
            first, total, abstained, model_first = await fieldguide_first_token(graph, question, resources, overrides)
            return {"first_token_ms": first, "model_first_token_ms": model_first, "total_ms": total,
                    "abstain": abstained}

        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            print(json.dumps(asyncio.run(one(json.loads(line)["question"]))), flush=True)


def start_worker(checkout: Path, args, collection: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--collection", collection]
    for pair in args.set:
        command += ["--set", pair]
    process = subprocess.Popen(command, cwd=checkout, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    ready = json.loads(process.stdout.readline())
    assert ready.get("ready"), ready
    return process


def ask(process: subprocess.Popen, question: str) -> dict:
    process.stdin.write(json.dumps({"question": question}) + "\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="the other checkout (e.g. a worktree of an older commit)")
    parser.add_argument("--questions", type=Path)
    parser.add_argument("--collection", required=True)
    parser.add_argument("--baseline-collection", help="the other checkout's collection (default: --collection)")
    parser.add_argument("--n", type=int, default=12, help="questions taken from the top of the file")
    parser.add_argument("--rounds", type=int, default=2, help="times each question is asked of each checkout")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="per-request option for this checkout's worker (the baseline's knows no new options)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        overrides = dict(pair.split("=", 1) for pair in args.set)
        worker(args.collection, overrides)
        return 0
    if not args.baseline or not args.questions:
        parser.error("--baseline and --questions are required")

    questions = [json.loads(line)["question"] for line in args.questions.read_text().splitlines() if line.strip()]
    questions = [q for q in questions][: args.n]
    baseline_args = argparse.Namespace(**{**vars(args), "set": []})
    workers = {"this": start_worker(ROOT, args, args.collection),
               "baseline": start_worker(args.baseline.resolve(), baseline_args,
                                        args.baseline_collection or args.collection)}
    times: dict[str, list[dict]] = {name: [] for name in workers}
    loads = [os.getloadavg()[0]]
    try:
        for round_ in range(args.rounds):
            for index, question in enumerate(questions):
                order = list(workers) if (index + round_) % 2 == 0 else list(reversed(workers))
                for name in order:
                    times[name].append(ask(workers[name], question))
                loads.append(os.getloadavg()[0])
    finally:
        for process in workers.values():
            process.stdin.close()
            process.wait(timeout=60)
    answered = [i for i in range(len(times["this"]))
                if not times["this"][i]["abstain"] and not times["baseline"][i]["abstain"]]
    result = {}
    for name, rows in times.items():
        first = [rows[i]["first_token_ms"] for i in answered if rows[i]["first_token_ms"] is not None]
        model_first = [rows[i]["model_first_token_ms"] for i in answered if rows[i]["model_first_token_ms"] is not None]
        total = [rows[i]["total_ms"] for i in answered]
        result[name] = {"first_token_p50_ms": round(statistics.median(first), 1),
                        "model_first_token_p50_ms": round(statistics.median(model_first), 1),
                        "model_first_token_range_ms": [round(min(model_first)), round(max(model_first))],
                        "total_p50_ms": round(statistics.median(total), 1), "answers": len(answered)}
    result["first_token_ratio"] = round(result["this"]["first_token_p50_ms"] / result["baseline"]["first_token_p50_ms"], 3)
    result["model_first_token_ratio"] = round(
        result["this"]["model_first_token_p50_ms"] / result["baseline"]["model_first_token_p50_ms"], 3)
    result["load_average"] = {"min": round(min(loads), 2), "max": round(max(loads), 2), "cpus": os.cpu_count()}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
