"""Scale: ingest throughput, retrieval latency and the Weaviate server's memory at 1x and 10x a corpus.

The 10x corpus is the docs folder copied ten times, each copy under a folder of its own
(`edition-01/` ... `edition-10/`) with every heading made distinct ("Edition 3: Accounts"), so
ten copies make ten times the chunks with ten different breadcrumbs and ids. Each size gets a
Weaviate server of its own (fresh data, free loopback ports), so its resident memory is that
corpus's alone:

* ingest   - `fieldguide ingest DIR --json` into the empty server: wall seconds, texts per second;
* retrieve - `fieldguide retrieve --batch QUESTIONS` against each size in turn (`--rounds`
             rounds, the sizes alternating), p50/p95 of the result lines' `timings_ms.total`;
* memory   - the server's VmRSS after its ingest and after the retrieval rounds.

Expected: ingest cost linear in the corpus, retrieval sub-linear (target: p50 at 10x <= 1.5 x
its value at 1x). With ten copies every answer exists ten times, so only latency is measured
here, not quality.

    python benchmarks/bench_scale.py DOCS_DIR QUESTIONS.jsonl [--factor 10] [--rounds 2]
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

REPO_ROOT = Path(__file__).resolve().parents[1]
RETRIEVAL_TARGET = 1.5


def copy_with_distinct_headings(docs: Path, out: Path, edition: int) -> None:
    """Every Markdown file of `docs` under `out`, each heading prefixed with "Edition N: "."""
    from ingest.chunker import MARKDOWN_SUFFIXES
    from ingest.markdown import decode_markdown, parse_markdown

    for path in sorted(docs.rglob("*")):
        target = out / path.relative_to(docs)
        if path.is_dir():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() not in MARKDOWN_SUFFIXES:
            shutil.copy(path, target)
            continue
        text, _ = decode_markdown(path.read_bytes(), path.name)
        doc = parse_markdown(text, path.name)
        lines = list(doc.lines)
        for heading in doc.headings:
            line = lines[heading.start]
            if heading.start == heading.end:  # ATX: after the indent and the opening hashes
                stripped = line.lstrip(" ")
                at = len(line) - len(stripped) + len(stripped) - len(stripped.lstrip("#"))
                lines[heading.start] = line[:at] + f" Edition {edition}:" + line[at:]
            else:  # setext: the title line above the underline
                lines[heading.start] = f"Edition {edition}: {line}"
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def build_corpus(docs: Path, out: Path, factor: int) -> Path:
    for edition in range(1, factor + 1):
        copy_with_distinct_headings(docs, out / f"edition-{edition:02d}", edition)
    return out


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def percentile(values: list[float], q: float) -> float:
    from fieldguide.evaluation.metrics import nearest_rank_percentile

    return round(nearest_rank_percentile(values, q), 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs_dir", type=Path)
    parser.add_argument("questions", type=Path)
    parser.add_argument("--factor", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    from fieldguide import weaviate_server
    from fieldguide.settings import Settings

    base = Settings()
    cli = [sys.executable, "-m", "fieldguide.cli"]
    sizes = {"1x": 1, f"{args.factor}x": args.factor}
    figures: dict = {"corpus": str(args.docs_dir), "factor": args.factor, "cpus": os.cpu_count(),
                     "load_average_at_start": [round(x, 2) for x in os.getloadavg()], "sizes": {}}
    servers, envs = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        try:
            for name, factor in sizes.items():
                docs = build_corpus(args.docs_dir, tmp / f"corpus-{name}", factor)
                settings = Settings(data_dir=tmp / f"server-{name}", weaviate_url=None,
                                    weaviate_binary=base.weaviate_binary or weaviate_server.find_binary(base))
                http_port, grpc_port = weaviate_server.free_port(), weaviate_server.free_port()
                state = weaviate_server.start(settings, http_port=http_port, grpc_port=grpc_port)
                servers[name] = (settings, state["pid"])
                envs[name] = dict(os.environ, PYTHONPATH=str(REPO_ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                                  DISABLE_TELEMETRY="true", TOKENIZERS_PARALLELISM="false",
                                  FIELDGUIDE_WEAVIATE_URL=f"http://127.0.0.1:{http_port}",
                                  FIELDGUIDE_WEAVIATE_GRPC_PORT=str(grpc_port), FIELDGUIDE_COLLECTION="BenchScale")
                rss_idle = rss_mib(state["pid"])
                started = time.perf_counter()
                done = subprocess.run(cli + ["ingest", str(docs), "--json"], env=envs[name], capture_output=True,
                                      text=True, check=True)
                wall = time.perf_counter() - started
                summary = json.loads(done.stdout.strip().splitlines()[-1])
                figures["sizes"][name] = {
                    "files": summary["files_seen"], "chunks": summary["chunks_written"],
                    "ingest_seconds": round(wall, 1), "ingest_texts_per_s": round(summary["chunks_written"] / wall, 1),
                    "ingest_load_average": round(os.getloadavg()[0], 2),
                    "server_rss_mib": {"empty": rss_idle, "after_ingest": rss_mib(state["pid"])}}
                print(f"{name}: {summary['chunks_written']} chunks in {wall:.1f}s", file=sys.stderr)

            latencies: dict[str, list[float]] = {name: [] for name in sizes}
            for round_index in range(args.rounds):
                order = list(sizes) if round_index % 2 == 0 else list(sizes)[::-1]
                for name in order:
                    done = subprocess.run(cli + ["retrieve", "--batch", str(args.questions)], env=envs[name],
                                          capture_output=True, text=True, check=True)
                    latencies[name] += [json.loads(line)["timings_ms"]["total"] for line in done.stdout.splitlines()]
                print(f"retrieval round {round_index + 1} (load {os.getloadavg()[0]:.2f})", file=sys.stderr)
            for name in sizes:
                entry = figures["sizes"][name]
                entry["retrieval_ms"] = {"n": len(latencies[name]), "p50": percentile(latencies[name], 0.5),
                                         "p95": percentile(latencies[name], 0.95)}
                entry["server_rss_mib"]["after_retrieval"] = rss_mib(servers[name][1])
        finally:
            for settings, _ in servers.values():
                weaviate_server.stop(settings)

    small, large = figures["sizes"]["1x"], figures["sizes"][f"{args.factor}x"]
    figures["ratios_large_over_small"] = {
        "chunks": round(large["chunks"] / small["chunks"], 2),
        "ingest_seconds": round(large["ingest_seconds"] / small["ingest_seconds"], 2),
        "retrieval_p50": round(large["retrieval_ms"]["p50"] / small["retrieval_ms"]["p50"], 3),
        "retrieval_p95": round(large["retrieval_ms"]["p95"] / small["retrieval_ms"]["p95"], 3),
        "server_rss_after_retrieval": round(large["server_rss_mib"]["after_retrieval"]
                                            / small["server_rss_mib"]["after_retrieval"], 2)}
    figures["retrieval_p50_target"] = RETRIEVAL_TARGET
    figures["retrieval_p50_ok"] = figures["ratios_large_over_small"]["retrieval_p50"] <= RETRIEVAL_TARGET
    figures["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
