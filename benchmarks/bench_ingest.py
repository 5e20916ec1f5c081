"""Ingest benchmark: full ingest vs the raw embedding model, and an unchanged re-ingest.

Each figure is a whole process, measured in the same run on the same machine:

* raw encode  - `python` loading sentence-transformers and encoding every `embed_text` of the
                corpus (what any ingest must at least pay);
* full ingest - `fieldguide ingest DOCS --reindex --json` (walk, hash, chunk, embed, insert);
* unchanged   - `fieldguide ingest DOCS --json` again with nothing changed.

Targets: full ingest <= 1.18 x raw encode; unchanged re-ingest <= 5 % of a full ingest.
Peak RSS is each child process's maximum resident set size.

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


def timed(command: list[str], env: dict) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stdout) of one child process."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait4 gives this child's own rusage (RUSAGE_CHILDREN would mix all children)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    stdout, stderr = process.stdout.read(), process.stderr.read()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"command failed ({process.returncode}): {' '.join(command)}\n{stderr[-2000:]}")
    return seconds, usage.ru_maxrss / 1024, stdout


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
    if not settings.weaviate_url:
        weaviate_server.start(settings)
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
        for round_index in range(args.repeat):
            raw.append(timed([sys.executable, "-c", RAW_ENCODE, str(texts_file), embedding_model_path(settings),
                              str(settings.embedding_batch_size)], env))
            full.append(timed(ingest + ["--reindex"], env))
            unchanged.append(timed(ingest, env))
            print(f"round {round_index + 1}: raw {raw[-1][0]:.2f}s  full {full[-1][0]:.2f}s  "
                  f"unchanged {unchanged[-1][0]:.2f}s", file=sys.stderr)

    best = lambda runs: min(runs, key=lambda run: run[0])  # noqa: E731
    (raw_s, raw_rss, _), (full_s, full_rss, full_out), (same_s, same_rss, same_out) = best(raw), best(full), best(unchanged)
    full_summary, same_summary = json.loads(full_out.strip().splitlines()[-1]), json.loads(same_out.strip().splitlines()[-1])
    ratio, share = full_s / raw_s, same_s / full_s
    print(json.dumps({
        "corpus": str(args.docs_dir), "files": full_summary["files_seen"], "chunks": full_summary["chunks_written"],
        "texts_encoded_raw": len(texts), "cpus": os.cpu_count(), "repeat": args.repeat,
        "raw_encode_seconds": round(raw_s, 2), "full_ingest_seconds": round(full_s, 2),
        "unchanged_reingest_seconds": round(same_s, 2),
        "full_over_raw": round(ratio, 3), "full_over_raw_target": FULL_TARGET, "full_over_raw_ok": ratio <= FULL_TARGET,
        "unchanged_share_of_full": round(share, 4), "unchanged_target": UNCHANGED_TARGET,
        "unchanged_ok": share <= UNCHANGED_TARGET, "unchanged_texts_embedded": same_summary["texts_embedded"],
        "peak_rss_mib": {"raw_encode": round(raw_rss), "full_ingest": round(full_rss), "unchanged": round(same_rss)},
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
