"""The local chat model's prompt read and tokens under each OpenMP wait policy and thread count.

    python benchmarks/bench_chat_threads.py [--busy N] [--rounds 2] [--reps 4] [--threads 2:2 1:1]
        [--policies default PASSIVE]

What a first token costs is mostly llama.cpp reading the prompt (prefill). For each wait policy
(`OMP_WAIT_POLICY`: libgomp reads it once, when llama_cpp loads it, so each policy runs in a
process of its own, the processes alternating round by round), one process loads the packaged
GGUF model once per thread setting (`threads:threads_batch`) and, alternating between them,
times reading a prompt of about 480 tokens of the dev docs from an empty cache, then 16
single-token steps. `--busy N` starts N busy loops for the whole run (and stops them), a
reproducible share of other work on the same cores. Prints one JSON line per policy and
thread setting: medians of each round and overall, with the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT.parent / "shared" / "corpora" / "actual-budget" / "docs"
PROMPT_TOKENS = 480
DECODE_TOKENS = 16


def worker(threads: list[str], reps: int, docs: Path) -> None:
    """One process, one wait policy: prefill and decode timings per thread setting."""
    from llama_cpp import Llama

    from fieldguide.chat import default_gguf_path

    settings = [tuple(int(n) for n in pair.split(":")) for pair in threads]
    models = {s: Llama(model_path=default_gguf_path(), n_ctx=2048, n_threads=s[0], n_threads_batch=s[1],
                       verbose=False) for s in settings}
    text = " ".join(path.read_text(encoding="utf-8") for path in sorted(docs.rglob("*.md"))[:3])
    tokens = models[settings[0]].tokenize(text.encode())[:PROMPT_TOKENS]
    timings: dict[tuple, dict[str, list[float]]] = {s: {"prefill_ms": [], "token_ms": []} for s in settings}
    for rep in range(reps):
        for s in settings if rep % 2 == 0 else settings[::-1]:
            model = models[s]
            model.reset()  # an empty prompt cache: every rep reads the whole prompt
            prompt = [model.token_bos()] + tokens[rep:] + tokens[:rep]
            started = time.perf_counter()
            model.eval(prompt)
            read = time.perf_counter()
            for token in tokens[:DECODE_TOKENS]:
                model.eval([token])
            timings[s]["prefill_ms"].append(round((read - started) * 1000, 1))
            timings[s]["token_ms"].append(round((time.perf_counter() - read) * 1000 / DECODE_TOKENS, 2))
    print(json.dumps({f"{s[0]}:{s[1]}": values for s, values in timings.items()}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--busy", type=int, default=0, help="busy loops started for the run (default 0)")
    parser.add_argument("--rounds", type=int, default=2, help="processes per policy, alternating (default 2)")
    parser.add_argument("--reps", type=int, default=4, help="timings per thread setting in each process (default 4)")
    parser.add_argument("--threads", nargs="+", default=["2:2", "1:1"], metavar="T:TB",
                        help="n_threads:n_threads_batch settings (default 2:2 1:1)")
    parser.add_argument("--policies", nargs="+", default=["default", "PASSIVE"],
                        help="OMP_WAIT_POLICY values; `default` leaves it unset (default: default PASSIVE)")
    parser.add_argument("--docs", type=Path, default=DOCS, help="Markdown the prompt is taken from")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.threads, args.reps, args.docs)
        return 0

    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    load_start = [round(x, 2) for x in os.getloadavg()]
    results: dict[tuple[str, str], dict[str, list]] = {}
    try:
        for round_ in range(args.rounds):
            for policy in args.policies if round_ % 2 == 0 else args.policies[::-1]:
                env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
                if policy != "default":
                    env["OMP_WAIT_POLICY"] = policy
                env["PYTHONPATH"] = str(ROOT)
                out = subprocess.run([sys.executable, __file__, "--worker", "--reps", str(args.reps),
                                      "--docs", str(args.docs), "--threads", *args.threads],
                                     env=env, capture_output=True, text=True, check=True).stdout
                for setting, values in json.loads(out.splitlines()[-1]).items():
                    row = results.setdefault((policy, setting), {"prefill_ms": [], "token_ms": [], "rounds": []})
                    row["prefill_ms"] += values["prefill_ms"]
                    row["token_ms"] += values["token_ms"]
                    row["rounds"].append(statistics.median(values["prefill_ms"]))
    finally:
        for process in busy:
            process.kill()
            process.wait()
    load_end = [round(x, 2) for x in os.getloadavg()]
    for (policy, setting), row in results.items():
        print(json.dumps({"omp_wait_policy": policy, "threads": setting, "busy_loops": args.busy,
                          "prefill_ms_p50": statistics.median(row["prefill_ms"]),
                          "prefill_ms_max": max(row["prefill_ms"]),
                          "prefill_ms_p50_per_round": row["rounds"],
                          "token_ms_p50": statistics.median(row["token_ms"]),
                          "load_average_start": load_start, "load_average_end": load_end}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
