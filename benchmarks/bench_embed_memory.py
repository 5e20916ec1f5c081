"""Memory of a long-running process's embedding model: many calls of every shape, RSS as it goes.

A service embeds a question per turn and, for the evidence, every quotable unit of its context:
texts of every length, alone and in batches. A runtime that keeps something per input shape
grows with the number of shapes it has seen. This script makes `--calls` calls of random shapes
(1-200 words, batches of 1 to 40, drawn from the corpus's own words; the same draws for every
runtime) and prints the process's resident memory every `--every` calls, for the runtimes given,
each in a process of its own.

    python benchmarks/bench_embed_memory.py DOCS_DIR [--runtimes openvino onnxruntime] [--calls 3000] [--every 250]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, random, sys, time
from fieldguide.embedding import load_embeddings
from fieldguide.settings import Settings

words, calls, every = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
embeddings = load_embeddings(Settings())

def rss_mib():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

random.seed(0)
embeddings.embed_query("warm up")
report = {"runtime": embeddings.encoder.runtime, "precision": embeddings.encoder.precision,
          "rss_mib": [[0, round(rss_mib())]]}
started = time.perf_counter()
for call in range(1, calls + 1):
    length = random.randint(1, 200)
    size = random.choice([1, 1, 1, 2, 5, 17, 40])
    texts = [" ".join(random.choices(words, k=random.randint(max(1, length - 3), length))) for _ in range(size)]
    embeddings.embed_documents(texts) if size > 1 else embeddings.embed_query(texts[0])
    if call % every == 0:
        report["rss_mib"].append([call, round(rss_mib())])
report["seconds"] = round(time.perf_counter() - started, 1)
print(json.dumps(report))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs_dir", type=Path)
    parser.add_argument("--runtimes", nargs="+", default=["openvino", "onnxruntime"],
                        choices=["openvino", "onnxruntime"])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--every", type=int, default=250)
    args = parser.parse_args()

    words = [w for path in sorted(args.docs_dir.rglob("*.md"))
             for w in path.read_text(encoding="utf-8", errors="replace").split()]
    words_file = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-embed-memory-{os.getpid()}.json"
    words_file.write_text(json.dumps(words))
    results = {"calls": args.calls, "load_average_at_start": [round(x, 2) for x in os.getloadavg()], "runs": []}
    try:
        for runtime in args.runtimes:
            env = dict(os.environ, FIELDGUIDE_EMBEDDING_RUNTIME=runtime, PYTHONPATH=str(ROOT),
                       HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
            done = subprocess.run([sys.executable, "-c", CHILD, str(words_file), str(args.calls), str(args.every)],
                                  env=env, capture_output=True, text=True, check=True)
            run = json.loads(done.stdout.strip().splitlines()[-1])
            first_quarter = next((rss for call, rss in run["rss_mib"] if call >= args.calls // 4), None)
            run["growth_after_first_quarter_mib"] = run["rss_mib"][-1][1] - first_quarter if first_quarter else None
            results["runs"].append(run)
            print(f"{runtime}: " + ", ".join(f"{call}:{rss}" for call, rss in run["rss_mib"]), file=sys.stderr)
    finally:
        words_file.unlink(missing_ok=True)
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
