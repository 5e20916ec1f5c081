"""Ingest benchmark: full ingest against the raw encoder, per embedding backend, in one run.

Each figure is a whole process, timed in the same run on the same machine, the processes of a
round taken in turn and the order of the backends swapped every round, so that a burst of
outside load does not always fall on the same side:

* raw encode  - a bare process encoding every `embed_text` of the corpus with the backend's
                model and nothing else: sentence-transformers (torch), or the exported ONNX
                model through onnxruntime (onnx-none, onnx-int8) or OpenVINO (onnx-bf16).
                What any ingest must at least pay;
* full ingest - `fieldguide ingest DOCS --reindex --json` with that backend (walk, hash, chunk,
                embed, insert), this checkout's code, into a collection of its own;
* unchanged   - `fieldguide ingest DOCS --json` again with nothing changed;
* baseline    - with `--baseline CHECKOUT`, that checkout's `fieldguide ingest --reindex` (for
                example the code before the onnx backend: `git worktree add ../base <commit>`),
                timed in the same rounds.

Backends are named as the index manifest names them: `onnx-bf16` (the default: the fp32 graph on
OpenVINO, in bf16 arithmetic where the CPU has bf16 instructions and bf16 measured faster there,
else in fp32, which the manifest then records as `onnx-none`), `onnx-none` (the fp32 graph on
onnxruntime), `onnx-int8`, `torch`. Targets: full ingest <= 1.1 x the raw encoder of the same backend; an
ingest at least 1.8 x faster than the baseline's (fp32 torch); an unchanged re-ingest <= 5 % of
a full ingest. CPU seconds
(user + system of the child; for an ingest plus what the local Weaviate server spent meanwhile)
are printed beside wall time: on a shared, busy machine they are the steadier comparison.

Peak RSS is each child's own: it is started by a bare `python -S` launcher (`LEAN_LAUNCHER`),
which forks it and reads its `ru_maxrss`. A child started straight from this script would
report at least this script's size (it has loaded the models): the kernel carries the parent's
high-water mark across fork (and vfork) and exec. The launcher's own size is the floor of every
figure and is printed as `rss_floor_mib`.

    python benchmarks/bench_ingest.py DOCS_DIR [--repeat N] [--backends onnx-none onnx-int8 torch] [--baseline CHECKOUT]

The Weaviate server is the configured one (FIELDGUIDE_WEAVIATE_URL) or the locally managed
one; it is started, and the onnx export made, before timing begins.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FULL_TARGET = 1.1
SPEEDUP_TARGET = 1.8
UNCHANGED_TARGET = 0.05

RAW_TORCH = r"""
import json, sys
from sentence_transformers import SentenceTransformer
texts = json.load(open(sys.argv[1]))
model = SentenceTransformer(sys.argv[2], device="cpu")
vectors = model.encode(texts, batch_size=int(sys.argv[3]), normalize_embeddings=True)
print(len(vectors))
"""

RAW_ONNX = r"""
import json, sys
from fieldguide.onnx_embeddings import OnnxEncoder
texts = json.load(open(sys.argv[1]))
vectors = OnnxEncoder(sys.argv[2], runtime=sys.argv[4]).encode(texts, int(sys.argv[3]))
print(len(vectors))
"""


# Runs argv[2:] as its child and writes that child's peak RSS (KiB) and CPU seconds to argv[1].
LEAN_LAUNCHER = r"""
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def server_cpu_seconds(pid: int | None) -> float:
    """CPU time the local Weaviate server has used so far (0 when it is not ours to see)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, TypeError):
        return 0.0


def timed(command: list[str], env: dict, server_pid: int | None = None, cwd: Path | None = None) -> dict:
    """Wall seconds, CPU seconds, peak RSS (MiB) and stdout of one child process, started by the
    lean launcher (see the module doc)."""
    server_before = server_cpu_seconds(server_pid)
    with tempfile.NamedTemporaryFile("r", suffix=".usage") as usage_file:
        started = time.perf_counter()
        process = subprocess.run([sys.executable, "-S", "-c", LEAN_LAUNCHER, usage_file.name, *command], env=env,
                                 cwd=cwd, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if process.returncode != 0:
            sys.exit(f"command failed ({process.returncode}): {' '.join(command)}\n{process.stderr[-2000:]}")
        max_rss_kib, cpu = usage_file.read().split()
    return {"wall": seconds, "cpu": float(cpu), "rss": int(max_rss_kib) / 1024,
            "server_cpu": server_cpu_seconds(server_pid) - server_before, "stdout": process.stdout}


BACKENDS = ("onnx-bf16", "onnx-none", "onnx-int8", "torch")


def backend_settings(backend: str) -> dict:
    """Settings fields of a backend id (`torch`, `onnx-none`, `onnx-int8`, `onnx-bf16`): `onnx-none`
    is the fp32 graph on onnxruntime, `onnx-bf16` the same graph on OpenVINO (bf16 where the CPU
    has bf16 instructions and bf16 measured faster on it, which the manifest then records)."""
    if backend == "onnx-bf16":
        return {"embedding_backend": "onnx", "embedding_quantization": "none", "embedding_runtime": "openvino"}
    name, _, quantization = backend.partition("-")
    fields = {"embedding_backend": name, **({"embedding_quantization": quantization} if quantization else {})}
    return {**fields, "embedding_runtime": "onnxruntime"} if name == "onnx" else fields


def cli_env(checkout: Path, collection: str, backend: str | None) -> dict:
    """The environment of a `python -m fieldguide.cli` child running `checkout`'s code."""
    env = dict(os.environ, FIELDGUIDE_COLLECTION=collection, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               DISABLE_TELEMETRY="true", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(checkout))
    for name in ("FIELDGUIDE_EMBEDDING_BACKEND", "FIELDGUIDE_EMBEDDING_QUANTIZATION", "FIELDGUIDE_EMBEDDING_RUNTIME"):
        env.pop(name, None)
    for field, value in backend_settings(backend).items() if backend else ():
        env[f"FIELDGUIDE_{field.upper()}"] = value
    return env


def best(runs: list[dict], key: str = "wall") -> float:
    return min(run[key] for run in runs)


def ingest_cpu(runs: list[dict]) -> float:
    return min(run["cpu"] + run["server_cpu"] for run in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs_dir", type=Path)
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the best of each figure is reported")
    parser.add_argument("--collection", default="BenchIngest")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=None,
                        help="embedding backends to time (default: the configured one)")
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="a checkout of earlier code whose `fieldguide ingest --reindex` is timed alongside")
    args = parser.parse_args()

    from fieldguide import weaviate_server
    from fieldguide.embedding import embedding_backend_id, embedding_model_path, load_embeddings
    from fieldguide.settings import Settings
    from ingest.chunker import Chunker, iter_markdown_files

    settings = Settings()
    backends = args.backends or [embedding_backend_id(settings)]
    server_pid = None if settings.weaviate_url else weaviate_server.start(settings).get("pid")
    chunker = Chunker(settings)
    texts = [c.embed_text for path in iter_markdown_files(args.docs_dir)
             for c in chunker.chunk_path(path, args.docs_dir).chunks]
    docs = str(args.docs_dir.resolve())
    load_start = [round(x, 2) for x in os.getloadavg()]

    with tempfile.TemporaryDirectory() as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts))
        steps: dict[str, dict] = {}  # name -> {"raw": [...], "full": [...], "unchanged": [...]}
        commands: dict[str, dict] = {}
        for backend in backends:
            collection = args.collection + "".join(part.capitalize() for part in backend.split("-"))
            env = cli_env(REPO_ROOT, collection, backend)
            if backend != "torch":  # export before timing: a one-off, not part of any ingest
                encoder = load_embeddings(settings.model_copy(update=backend_settings(backend)))
                raw = [sys.executable, "-c", RAW_ONNX, str(texts_file), str(encoder.folder),
                       str(settings.embedding_batch_size), encoder.encoder.runtime]
            else:
                raw = [sys.executable, "-c", RAW_TORCH, str(texts_file), embedding_model_path(settings),
                       str(settings.embedding_batch_size)]
            ingest = [sys.executable, "-m", "fieldguide.cli", "ingest", docs, "--json"]
            commands[backend] = {"raw": (raw, env, None), "full": (ingest + ["--reindex"], env, server_pid),
                                 "unchanged": (ingest, env, server_pid)}
        if args.baseline:
            baseline = args.baseline.resolve()
            env = cli_env(baseline, f"{args.collection}Baseline", None)
            env.pop("FIELDGUIDE_EMBEDDING_BACKEND", None)
            commands["baseline"] = {"full": ([sys.executable, "-m", "fieldguide.cli", "ingest", docs, "--reindex",
                                              "--json"], env, server_pid, baseline)}

        names = list(commands)
        for round_index in range(args.repeat):
            order = names if round_index % 2 == 0 else names[::-1]
            report = []
            for name in order:
                for step, spec in commands[name].items():
                    command, env, pid, *cwd = spec
                    result = timed(command, env, pid, cwd[0] if cwd else None)
                    steps.setdefault(name, {}).setdefault(step, []).append(result)
                    cpu = result["cpu"] + result["server_cpu"]
                    report.append(f"{name} {step} {result['wall']:.2f}s ({cpu:.1f} cpu)")
            print(f"round {round_index + 1} (load {os.getloadavg()[0]:.2f}): " + ", ".join(report), file=sys.stderr)

    figures: dict = {
        "corpus": str(args.docs_dir), "texts_encoded_raw": len(texts), "cpus": os.cpu_count(), "repeat": args.repeat,
        "rss_floor_mib": round(timed(["true"], dict(os.environ))["rss"]),
        "load_average_at_start": load_start, "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "backends": {},
    }
    for backend in backends:
        runs = steps[backend]
        full_summary = json.loads(runs["full"][-1]["stdout"].strip().splitlines()[-1])
        same_summary = json.loads(runs["unchanged"][-1]["stdout"].strip().splitlines()[-1])
        raw_s, full_s, same_s = best(runs["raw"]), best(runs["full"]), best(runs["unchanged"])
        figures["files"], figures["chunks"] = full_summary["files_seen"], full_summary["chunks_written"]
        figures["backends"][backend] = {
            "raw_encode_seconds": round(raw_s, 2), "full_ingest_seconds": round(full_s, 2),
            "unchanged_reingest_seconds": round(same_s, 2),
            "raw_encode_texts_per_s": round(len(texts) / raw_s, 1),
            "ingest_texts_per_s": round(full_summary["chunks_written"] / full_s, 1),
            "full_over_raw": round(full_s / raw_s, 3), "full_over_raw_target": FULL_TARGET,
            "full_over_raw_ok": full_s / raw_s <= FULL_TARGET,
            "raw_encode_cpu_seconds": round(best(runs["raw"], "cpu"), 1),
            "full_ingest_cpu_seconds_incl_server": round(ingest_cpu(runs["full"]), 1),
            "unchanged_share_of_full": round(same_s / full_s, 4), "unchanged_ok": same_s / full_s <= UNCHANGED_TARGET,
            "unchanged_texts_embedded": same_summary["texts_embedded"],
            "peak_rss_mib": {"raw_encode": round(min(r["rss"] for r in runs["raw"])),
                             "full_ingest": round(min(r["rss"] for r in runs["full"])),
                             "unchanged": round(min(r["rss"] for r in runs["unchanged"]))},
        }
    if "torch" in backends:
        torch = figures["backends"]["torch"]
        figures["speedup_over_torch"] = {backend: {
            "full_ingest": round(torch["full_ingest_seconds"] / figures["backends"][backend]["full_ingest_seconds"], 3),
            "raw_encode": round(torch["raw_encode_seconds"] / figures["backends"][backend]["raw_encode_seconds"], 3)}
            for backend in backends if backend != "torch"}
    if args.baseline:
        base = steps["baseline"]["full"]
        figures["baseline"] = {"checkout": args.baseline.name, "full_ingest_seconds": round(best(base), 2),
                               "full_ingest_cpu_seconds_incl_server": round(ingest_cpu(base), 1),
                               "peak_rss_mib": round(min(r["rss"] for r in base))}
        for backend in backends:
            speedup = best(base) / figures["backends"][backend]["full_ingest_seconds"]
            figures["baseline"][f"speedup_of_{backend}"] = round(speedup, 3)
        figures["baseline"]["speedup_target"] = SPEEDUP_TARGET
    # the configured backend's figures at the top level, as `fieldguide bench` reads them
    figures.update({key: figures["backends"][backends[0]][key] for key in (
        "raw_encode_seconds", "full_ingest_seconds", "unchanged_reingest_seconds", "full_over_raw")})
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
