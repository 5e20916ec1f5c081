"""`fieldguide bench`: where the time and the memory go.

* ingest    - `benchmarks/bench_ingest.py` (a full ingest against the raw encoder on the same
              texts, and an unchanged re-ingest), run as it is and its JSON kept;
* nodes     - p50/p95 milliseconds of every retrieval node, from the result lines' timings;
* generate  - time to first token and tokens per second of the configured chat model (the
              local GGUF model by default), through the whole graph;
* service   - a real `fieldguide serve` process: N concurrent conversations, then a soak of
              questions one after another with the server's resident memory sampled after each.
"""
from __future__ import annotations

import asyncio
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fieldguide.evaluation.metrics import nearest_rank_percentile
from fieldguide.processes import end_process

REPO_ROOT = Path(__file__).resolve().parents[2]
BENCH_INGEST = REPO_ROOT / "benchmarks" / "bench_ingest.py"


def percentiles(values: list[float]) -> dict:
    if not values:
        return {"n": 0, "p50": None, "p95": None}
    return {"n": len(values), "p50": round(nearest_rank_percentile(values, 0.5), 2),
            "p95": round(nearest_rank_percentile(values, 0.95), 2), "max": round(max(values), 2)}


def child_env(settings) -> dict:
    return dict(os.environ, FIELDGUIDE_COLLECTION=settings.collection, HF_HUB_OFFLINE="1",
                TRANSFORMERS_OFFLINE="1", DISABLE_TELEMETRY="true", TOKENIZERS_PARALLELISM="false")


# --------------------------------------------------------------------------- ingest
def bench_ingest(docs_dir: Path, collection: str) -> dict:
    """Run benchmarks/bench_ingest.py and return its figures (plus texts per second)."""
    if not BENCH_INGEST.is_file():
        return {"skipped": "benchmarks/bench_ingest.py not found: run from a checkout of the repository"}
    completed = subprocess.run([sys.executable, str(BENCH_INGEST), str(docs_dir), "--collection", collection],
                               capture_output=True, text=True, env=dict(os.environ, HF_HUB_OFFLINE="1",
                                                                        TRANSFORMERS_OFFLINE="1"))
    if completed.returncode != 0:
        return {"error": (completed.stderr or completed.stdout).strip()[-1000:]}
    figures = json.loads(completed.stdout[completed.stdout.index("{"):])
    corpus = Path(str(figures.get("corpus", docs_dir)))
    figures["corpus"] = f"{corpus.resolve().parent.name}/{corpus.name}"  # no absolute paths in reports
    chunks = figures.get("chunks") or 0
    if figures.get("full_ingest_seconds"):
        figures["ingest_texts_per_s"] = round(chunks / figures["full_ingest_seconds"], 1)
    if figures.get("raw_encode_seconds"):
        figures["raw_encode_texts_per_s"] = round(figures["texts_encoded_raw"] / figures["raw_encode_seconds"], 1)
    return figures


# ---------------------------------------------------------------------------- nodes
def node_latency(result_lines: list[dict]) -> dict:
    """p50/p95 per node (and the total) over the result lines' `timings_ms`."""
    by_node: dict[str, list[float]] = {}
    for line in result_lines:
        for node, ms in (line.get("timings_ms") or {}).items():
            by_node.setdefault(node, []).append(float(ms))
    return {node: percentiles(values) for node, values in by_node.items()}


# ------------------------------------------------------------------------- generate
def bench_generation(questions: list[str], settings, max_answer_tokens: int) -> dict:
    """Time to first token (from the question, retrieval included) and decode speed, per answer."""
    from fieldguide.retrieval import open_resources, stream_answer
    from graph.graph import build_graph

    async def one(full_graph, resources, question: str) -> dict:
        started = time.perf_counter()
        first = last = None
        tokens = 0
        state = {}
        async for kind, payload in stream_answer(full_graph, question, resources,
                                                 {"max_answer_tokens": max_answer_tokens}):
            if kind == "token":
                now = time.perf_counter()
                first = first or now
                last = now
                tokens += 1
            else:
                state = payload
        timings = state.get("timings_ms") or {}
        row = {"tokens": tokens, "abstain": bool(state.get("abstain")),
               "retrieval_ms": round(sum(v for k, v in timings.items() if k not in ("prompt", "generate")), 1)}
        if first is not None:
            row["ttft_ms"] = round((first - started) * 1000, 1)
            if tokens > 1 and last > first:
                row["tokens_per_s"] = round((tokens - 1) / (last - first), 1)
        return row

    async def all_questions() -> list[dict]:
        with open_resources(settings) as resources:
            full_graph = build_graph()
            resources.chat_model  # loaded before timing
            await one(full_graph, resources, "warm up: what is this?")
            return [await one(full_graph, resources, q) for q in questions]

    rows = asyncio.run(all_questions())
    answered = [r for r in rows if "ttft_ms" in r]
    return {
        "answers": len(rows), "abstained": sum(r["abstain"] for r in rows),
        "max_answer_tokens": max_answer_tokens,
        "ttft_ms": percentiles([r["ttft_ms"] for r in answered]),
        "tokens_per_s": percentiles([r["tokens_per_s"] for r in answered if "tokens_per_s" in r]),
        "tokens": percentiles([float(r["tokens"]) for r in answered]),
        "chat_model": Path(str(settings.chat_model)).name if settings.chat_model else "SmolLM2-135M-Instruct.Q4_1.gguf",
    }


# -------------------------------------------------------------------------- service
def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def model_process_pid(parent: int) -> int | None:
    """The pid of `parent`'s local model process (llama.cpp's server child), if it runs one."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent and b"llama_cpp.server" in cmdline:
            return int(entry.name)
    return None


def _rss_or_zero(pid: int | None) -> float:
    try:
        return rss_mib(pid) if pid else 0.0
    except OSError:  # it ended (and a later question starts it again)
        return 0.0


class ServedProcess:
    """`fieldguide serve` on a free loopback port, until the context ends."""

    def __init__(self, docs_dir: Path, settings, max_answer_tokens: int, log=print):
        self.port = load_benchmark("bench_service").free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = child_env(settings)
        env["FIELDGUIDE_MAX_ANSWER_TOKENS"] = str(max_answer_tokens)
        env["FIELDGUIDE_MAX_CONVERSATIONS"] = "1000"
        command = [sys.executable, "-m", "fieldguide.cli", "serve", "--port", str(self.port), "--docs",
                   str(docs_dir), "--collection", settings.collection, "--log-level", "warning"]
        self.log = log
        # stderr to a file: a pipe nobody reads would fill up and stall the server
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=self.stderr, text=True)

    def __enter__(self) -> "ServedProcess":
        import httpx

        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stderr.seek(0)
                message = self.stderr.read()[-1500:]
                self.stderr.close()
                raise RuntimeError(f"fieldguide serve exited: {message}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(1)
        self.__exit__()
        raise RuntimeError("fieldguide serve was not ready within 10 minutes")

    def __exit__(self, *exc) -> None:
        end_process(self.process, 30)
        self.stderr.close()


@functools.lru_cache(maxsize=None)
def load_benchmark(name: str):
    """A script of benchmarks/ as a module (its client code is reused, not copied), or None outside a checkout."""
    import importlib.util

    path = REPO_ROOT / "benchmarks" / f"{name}.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"fieldguide_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def converse(client, base: str, question: str) -> dict:
    """Ask once and follow the stream to its end (bench_service.ask_and_read); times from the POST."""
    import httpx

    started = time.perf_counter()
    try:
        events = await load_benchmark("bench_service").ask_and_read(client, base, question)
    except httpx.HTTPError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    tokens = [at for name, _data, at in events if name == "token"]
    row: dict = {"tokens": len(tokens)}
    if events:
        row["total_ms"] = round((events[-1][2] - started) * 1000, 1)
    if tokens:
        row["ttft_ms"] = round((tokens[0] - started) * 1000, 1)
    if not events or events[-1][0] != "done":
        row["error"] = events[-1][1][:200] if events else "no events"
    return row


async def concurrent_conversations(url: str, questions: list[str], n: int) -> dict:
    import httpx

    limits = httpx.Limits(max_connections=n * 2, max_keepalive_connections=n * 2)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600.0), limits=limits) as client:
        started = time.perf_counter()
        rows = await asyncio.gather(*(converse(client, url, questions[i % len(questions)]) for i in range(n)))
        wall = time.perf_counter() - started
    done = [r for r in rows if "error" not in r]
    return {"conversations": n, "completed": len(done), "errors": sorted({r["error"] for r in rows if "error" in r}),
            "wall_s": round(wall, 1), "ttft_ms": percentiles([r["ttft_ms"] for r in done if "ttft_ms" in r]),
            "total_ms": percentiles([r["total_ms"] for r in done]),
            "tokens": sum(r["tokens"] for r in done)}


async def soak(url: str, pid: int, questions: list[str], n: int, log=print) -> dict:
    import httpx

    # The service and its model process are measured apart: the model lives in a child of its own.
    samples = [(0, round(rss_mib(pid), 1))]
    model_samples = [(0, round(_rss_or_zero(model_process_pid(pid)), 1))]
    errors = 0
    async with httpx.AsyncClient(timeout=httpx.Timeout(600.0)) as client:
        started = time.perf_counter()
        for i in range(n):
            row = await converse(client, url, questions[i % len(questions)])
            errors += "error" in row
            samples.append((i + 1, round(rss_mib(pid), 1)))
            model_samples.append((i + 1, round(_rss_or_zero(model_process_pid(pid)), 1)))
            if (i + 1) % 10 == 0:
                log(f"soak: {i + 1}/{n} questions, RSS {samples[-1][1]:.0f} MiB "
                    f"(model process {model_samples[-1][1]:.0f} MiB)")
        wall = time.perf_counter() - started
    values = [mib for _, mib in samples]
    # growth over the second half: warm-up allocations are done by then
    half = values[len(values) // 2:]
    return {"questions": n, "errors": errors, "wall_s": round(wall, 1), "rss_mib": samples,
            "rss_start_mib": values[0], "rss_end_mib": values[-1], "rss_max_mib": max(values),
            "rss_growth_second_half_mib": round(half[-1] - half[0], 1) if len(half) > 1 else 0.0,
            "model_rss_mib": model_samples, "model_rss_end_mib": model_samples[-1][1],
            "model_rss_max_mib": max(mib for _, mib in model_samples)}


def save_rss_chart(samples: list[tuple[int, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot([i for i, _ in samples], [mib for _, mib in samples], marker=".")
    ax.set_xlabel("questions answered")
    ax.set_ylabel("server resident memory (MiB)")
    ax.set_title("fieldguide serve: resident memory during the soak")
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def bench_service(docs_dir: Path, settings, questions: list[str], *, concurrent: int, soak_n: int,
                  max_answer_tokens: int, out_dir: Path, log=print) -> dict:
    if load_benchmark("bench_service") is None:
        return {"skipped": "benchmarks/bench_service.py not found: run from a checkout of the repository"}
    with ServedProcess(docs_dir, settings, max_answer_tokens, log) as served:
        figures = {"max_answer_tokens": max_answer_tokens, "rss_ready_mib": round(rss_mib(served.process.pid), 1)}
        if concurrent:
            log(f"service: {concurrent} concurrent conversations")
            figures["concurrent"] = asyncio.run(concurrent_conversations(served.url, questions, concurrent))
        if soak_n:
            log(f"service: soak of {soak_n} questions")
            figures["soak"] = asyncio.run(soak(served.url, served.process.pid, questions, soak_n, log))
            save_rss_chart(figures["soak"]["rss_mib"], out_dir / "soak_rss.png")
    return figures


def summary(figures: dict) -> str:
    """The headline figures, one per line."""
    lines = []
    ingest = figures.get("ingest") or {}
    if "full_ingest_seconds" in ingest:
        lines.append(f"ingest: {ingest['chunks']} chunks in {ingest['full_ingest_seconds']} s "
                     f"({ingest.get('ingest_texts_per_s')} texts/s); raw encoder {ingest['raw_encode_seconds']} s "
                     f"({ingest.get('raw_encode_texts_per_s')} texts/s); full/raw {ingest['full_over_raw']}; "
                     f"unchanged re-ingest {ingest['unchanged_reingest_seconds']} s")
    elif ingest:
        lines.append(f"ingest: {ingest.get('skipped') or ingest.get('error')}")
    for node, p in (figures.get("node_latency_ms") or {}).items():
        lines.append(f"node {node:<11} p50 {p['p50']:>8} ms   p95 {p['p95']:>8} ms")
    generation = figures.get("generation")
    if generation:
        lines.append(f"generation ({generation['chat_model']}): time to first token p50 {generation['ttft_ms']['p50']} ms "
                     f"p95 {generation['ttft_ms']['p95']} ms; {generation['tokens_per_s']['p50']} tokens/s (p50)")
    service = figures.get("service") or {}
    if "concurrent" in service:
        c = service["concurrent"]
        lines.append(f"service: {c['completed']}/{c['conversations']} concurrent conversations in {c['wall_s']} s; "
                     f"first token p50 {c['ttft_ms']['p50']} ms p95 {c['ttft_ms']['p95']} ms; "
                     f"done p95 {c['total_ms']['p95']} ms; errors {c['errors'] or 'none'}")
    if "soak" in service:
        s = service["soak"]
        lines.append(f"soak: {s['questions']} questions, {s['errors']} errors; RSS {s['rss_start_mib']} -> "
                     f"{s['rss_end_mib']} MiB (max {s['rss_max_mib']}; second half {s['rss_growth_second_half_mib']:+} MiB)")
    return "\n".join(lines)
