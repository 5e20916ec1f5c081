"""Ingest benchmark: full ingest vs the raw embedding model, and an unchanged re-ingest.

Each figure is a whole process, measured in the same run on the same machine:

* raw encode  - `python` loading sentence-transformers and encoding every `embed_text` of the
                corpus (what any ingest must at least pay);
* full ingest - `fieldguide ingest DOCS --reindex --json` (walk, hash, chunk, embed, insert);
* unchanged   - `fieldguide ingest DOCS --json` again with nothing changed.

Targets: full ingest <= 1.18 x raw encode; unchanged re-ingest <= 5 % of a full ingest.
Peak RSS is each child process's maximum resident set size. CPU seconds (user + system of
the child; for the ingest plus what the local Weaviate server spent meanwhile) are printed
beside wall time: on a shared, busy machine they are the steadier comparison.

    python benchmarks/bench_ingest.py DOCS_DIR [--repeat N] [--collection NAME]

The Weaviate server is the configured one (FIELDGUIDE_WEAVIATE_URL) or the locally managed
one; it is started before timing begins.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FULL_TARGET = 1.18
UNCHANGED_TARGET = 0.05

RAW_ENCODE = r"""
import json, sys
from sentence_transformers import SentenceTransformer
texts = json.load(open(sys.argv[1]))
model = SentenceTransformer(sys.argv[2], device="cpu")
vectors = model.encode(texts, batch_size=int(sys.argv[3]), normalize_embeddings=True)
print(len(vectors))
"""


def server_cpu_seconds(pid: int | None) -> float:
    """CPU time the local Weaviate server has used so far (0 when it is not ours to see)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, TypeError):
        return 0.0


def timed(command: list[str], env: dict, server_pid: int | None = None) -> dict:
    """Wall seconds, CPU seconds, peak RSS (MiB) and stdout of one child process."""
    server_before = server_cpu_seconds(server_pid)
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait4 gives this child's own rusage (RUSAGE_CHILDREN would mix all children)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    stdout, stderr = process.stdout.read(), process.stderr.read()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"command failed ({process.returncode}): {' '.join(command)}\n{stderr[-2000:]}")
    return {"wall": seconds, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024,
            "server_cpu": server_cpu_seconds(server_pid) - server_before, "stdout": stdout}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs_dir", type=Path)
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the best of each figure is reported")
    parser.add_argument("--collection", default="BenchIngest")
    args = parser.parse_args()

    from fieldguide import weaviate_server
    from fieldguide.embedding import embedding_model_path
    from fieldguide.settings import Settings
    from ingest.chunker import Chunker, iter_markdown_files

    settings = Settings()
    server_pid = None if settings.weaviate_url else weaviate_server.start(settings).get("pid")
    chunker = Chunker(settings)
    texts = [c.embed_text for path in iter_markdown_files(args.docs_dir)
             for c in chunker.chunk_path(path, args.docs_dir).chunks]
    env = dict(os.environ, FIELDGUIDE_COLLECTION=args.collection, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               DISABLE_TELEMETRY="true", TOKENIZERS_PARALLELISM="false")
    fieldguide = shutil.which("fieldguide") or str(Path(sys.executable).with_name("fieldguide"))
    ingest = [fieldguide, "ingest", str(args.docs_dir), "--json"]

    raw, full, unchanged = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts))
        encode = [sys.executable, "-c", RAW_ENCODE, str(texts_file), embedding_model_path(settings),
                  str(settings.embedding_batch_size)]
        for round_index in range(args.repeat):
            # alternate the order so a burst of outside load does not always hit the same side
            if round_index % 2 == 0:
                raw.append(timed(encode, env))
                full.append(timed(ingest + ["--reindex"], env, server_pid))
            else:
                full.append(timed(ingest + ["--reindex"], env, server_pid))
                raw.append(timed(encode, env))
            unchanged.append(timed(ingest, env, server_pid))
            print(f"round {round_index + 1}: raw {raw[-1]['wall']:.2f}s ({raw[-1]['cpu']:.1f} cpu)  "
                  f"full {full[-1]['wall']:.2f}s ({full[-1]['cpu'] + full[-1]['server_cpu']:.1f} cpu)  "
                  f"unchanged {unchanged[-1]['wall']:.2f}s", file=sys.stderr)

    best = lambda runs, key="wall": min(run[key] for run in runs)  # noqa: E731
    raw_s, full_s, same_s = best(raw), best(full), best(unchanged)
    raw_cpu = best(raw, "cpu")
    full_cpu = min(run["cpu"] + run["server_cpu"] for run in full)
    full_summary = json.loads(full[-1]["stdout"].strip().splitlines()[-1])
    same_summary = json.loads(unchanged[-1]["stdout"].strip().splitlines()[-1])
    ratio, share = full_s / raw_s, same_s / full_s
    print(json.dumps({
        "corpus": str(args.docs_dir), "files": full_summary["files_seen"], "chunks": full_summary["chunks_written"],
        "texts_encoded_raw": len(texts), "cpus": os.cpu_count(), "repeat": args.repeat,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "raw_encode_seconds": round(raw_s, 2), "full_ingest_seconds": round(full_s, 2),
        "unchanged_reingest_seconds": round(same_s, 2),
        "full_over_raw": round(ratio, 3), "full_over_raw_target": FULL_TARGET, "full_over_raw_ok": ratio <= FULL_TARGET,
        "raw_encode_cpu_seconds": round(raw_cpu, 1), "full_ingest_cpu_seconds_incl_server": round(full_cpu, 1),
        "full_over_raw_cpu": round(full_cpu / raw_cpu, 3),
        "unchanged_share_of_full": round(share, 4), "unchanged_target": UNCHANGED_TARGET,
        "unchanged_ok": share <= UNCHANGED_TARGET, "unchanged_texts_embedded": same_summary["texts_embedded"],
        "peak_rss_mib": {"raw_encode": round(min(r["rss"] for r in raw)), "full_ingest": round(min(r["rss"] for r in full)),
                         "unchanged": round(min(r["rss"] for r in unchanged))},
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
