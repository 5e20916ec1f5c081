"""Service benchmarks on a real uvicorn server on loopback (a child process, so its memory is its own).

    python benchmarks/bench_service.py [--graph scripted|real] [--soak 1000] [--clients 20]

1. POST /conversations latency with `--clients` concurrent clients, each asking, reading its
   streamed answer to the end and asking again (p50/p95/max).
2. SSE overhead per token: the generator's own per-token time (the graph streamed in
   process) against the per-token time a client sees through the service.
3. Soak: `--soak` questions, one after another, each streamed to its end; the server's
   resident memory (VmRSS) is printed every `--every` questions, and the 100th is compared
   with the last.

`--graph scripted` (default) measures the service alone: a scripted graph streams a fixed
answer through a LangChain chat model, so figures do not depend on model speed. `--graph real`
runs the real query graph on the sample docs (needs Weaviate and the packaged models; each
question then costs a real generation, so use a smaller --soak).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
SSE_ANSWER_WORDS = 400


# --- the server (child process) --------------------------------------------------------------

def scripted_answer(words: int) -> str:
    return "See ![the form](images/booking-form.svg) first. " + " ".join(f"word{n}" for n in range(words))


def serve_child(args) -> None:
    from fieldguide.service.memory import limit_malloc_arenas

    limit_malloc_arenas()
    import uvicorn

    from fieldguide.service import create_app
    from fieldguide.settings import get_settings

    settings = get_settings().model_copy(update={"docs_dir": ROOT / "fieldguide" / "sample_docs"})
    if args.graph == "real":
        from ingest.pipeline import ingest_folder

        ingest_folder(settings.docs_dir, settings, progress=False)
        app = create_app(settings)
    else:
        from fieldguide_testing.scripted_graph import build_scripted_graph

        answer = scripted_answer(args.words)
        app = create_app(settings, lambda checkpointer=None: build_scripted_graph(
            checkpointer, answer=answer, token_delay=args.token_delay), readiness=lambda: None)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, graph: str, token_delay: float, words: int, env: dict | None = None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, __file__, "--serve-child", "--port", str(self.port), "--graph", graph,
                   "--token-delay", str(token_delay), "--words", str(words)]
        self.process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **(env or {})})
        deadline = time.monotonic() + 600
        while True:
            if self.process.poll() is not None:
                raise SystemExit("the server did not start")
            try:
                if httpx.get(self.base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise SystemExit("the server did not start within 600 s")
            time.sleep(0.2)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        from fieldguide.processes import end_process

        end_process(self.process, 20)


# --- client side --------------------------------------------------------------------------------

async def read_events(client: httpx.AsyncClient, url: str):
    """(event name, data, arrival time) of every event of one stream."""
    events, name = [], "message"
    async with client.stream("GET", url) as response:
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                events.append((name, line[5:].strip(), time.perf_counter()))
            elif line == "":
                name = "message"
    return events


async def ask_and_read(client: httpx.AsyncClient, base: str, question: str):
    response = await client.post(base + "/conversations", json={"question": question})
    response.raise_for_status()
    return await read_events(client, base + response.json()["stream_url"])


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


async def raw_request(host: str, port: int, method: str, path: str, body: dict | None = None,
                      until_closed: bool = False) -> tuple[int, bytes, float]:
    """One HTTP/1.1 request on a fresh connection: (status, body, seconds until the body is in).

    Plain asyncio streams rather than an HTTP client library: 20 clients' streams read through
    httpx cost the measuring process enough CPU to delay its own POSTs by tens of milliseconds
    on two cores, which then shows up as server latency. `until_closed` reads to the end of a
    streamed (chunked) body; otherwise the Content-Length body is read.
    """
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, port)
    try:
        payload = json.dumps(body).encode() if body is not None else b""
        head = f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        writer.write((head + "\r\n").encode() + payload)
        headers = await reader.readuntil(b"\r\n\r\n")
        status = int(headers.split(b" ", 2)[1])
        if until_closed:
            content = await reader.read()
        else:
            length = next((int(line.split(b":", 1)[1]) for line in headers.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            content = await reader.readexactly(length)
        return status, content, time.perf_counter() - started
    finally:
        writer.close()


async def bench_post(base: str, clients: int, per_client: int) -> dict:
    """Each client asks, follows its answer to the end, and asks again: POST latency under streaming load.

    The clients start together and their answers have the same length, so every round of
    questions arrives as a burst of `clients` POSTs (and as many stream requests)."""
    host, port = base.split("//", 1)[1].split(":")
    latencies: list[float] = []
    unfinished = 0

    async def worker(n: int) -> None:
        nonlocal unfinished
        for i in range(per_client):
            status, content, seconds = await raw_request(host, int(port), "POST", "/conversations",
                                                         {"question": f"client {n} question {i}"})
            latencies.append(seconds * 1000)
            assert status == 202, content
            _, streamed, _ = await raw_request(host, int(port), "GET", json.loads(content)["stream_url"],
                                               until_closed=True)
            unfinished += b"event: done" not in streamed[-4096:]

    await raw_request(host, int(port), "GET", "/healthz")
    await asyncio.gather(*(worker(n) for n in range(clients)))
    if unfinished:
        print(f"  warning: {unfinished} streams did not end with `done`")
    return {"requests": len(latencies), "p50_ms": percentile(latencies, 0.5),
            "p95_ms": percentile(latencies, 0.95), "max_ms": max(latencies)}


async def generator_rate(token_delay: float, words: int, runs: int) -> float:
    """Milliseconds per token of the scripted graph streamed in process (no HTTP)."""
    from fieldguide_testing.scripted_graph import build_scripted_graph

    graph = build_scripted_graph(answer=scripted_answer(words), token_delay=token_delay)
    per_token = []
    for _ in range(runs):
        times = []
        async for chunk in graph.astream({"question": "q"}, stream_mode="custom"):  # as the service reads tokens
            if chunk.get("token"):
                times.append(time.perf_counter())
        per_token.append((times[-1] - times[0]) * 1000 / (len(times) - 1))
    return statistics.median(per_token)


async def service_rate(base: str, runs: int) -> tuple[float, int]:
    per_token, count = [], 0
    async with httpx.AsyncClient(timeout=120) as client:
        for _ in range(runs):
            events = await ask_and_read(client, base, "How long is this answer?")
            times = [t for name, _data, t in events if name == "token"]
            count = len(times)
            per_token.append((times[-1] - times[0]) * 1000 / (len(times) - 1))
    return statistics.median(per_token), count


async def soak(server: Server, questions: int, every: int, concurrency: int) -> list[tuple[int, float]]:
    curve: list[tuple[int, float]] = [(0, server.rss_mb())]
    done = 0
    failures = 0
    async with httpx.AsyncClient(timeout=300) as client:
        while done < questions:
            batch = min(concurrency, questions - done)
            results = await asyncio.gather(*(ask_and_read(client, server.base, f"soak question {done + i}")
                                             for i in range(batch)))
            failures += sum(1 for events in results if not events or events[-1][0] != "done")
            for _ in range(batch):
                done += 1
                if done % every == 0 or done == questions:
                    curve.append((done, server.rss_mb()))
    if failures:
        print(f"  warning: {failures} questions did not end with `done`")
    return curve


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graph", choices=["scripted", "real"], default="scripted")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--posts-per-client", type=int, default=10)
    parser.add_argument("--post-token-delay", type=float, default=0.02,
                        help="seconds between scripted tokens while POST latency is measured (a fast model's pace)")
    parser.add_argument("--max-conversations", type=int,
                        help="conversations the soak server retains for replay (default: the setting, 500)")
    parser.add_argument("--token-delay", type=float, default=0.002,
                        help="seconds between scripted tokens (the generator's own pace)")
    parser.add_argument("--words", type=int, default=SSE_ANSWER_WORDS, help="scripted answer length")
    parser.add_argument("--sse-runs", type=int, default=5)
    parser.add_argument("--soak", type=int, default=1000, help="questions in the soak")
    parser.add_argument("--soak-words", type=int, default=60, help="scripted answer length during the soak")
    parser.add_argument("--soak-concurrency", type=int, default=4)
    parser.add_argument("--every", type=int, default=100, help="print memory every N questions")
    parser.add_argument("--json", action="store_true", help="also print one JSON line with every figure")
    # internal: the child process
    parser.add_argument("--serve-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_child:
        serve_child(args)
        return 0

    os.environ.setdefault("DISABLE_TELEMETRY", "true")
    results: dict = {"graph": args.graph}
    print(f"graph: {args.graph}" + (" (scripted stand-in: measures the service alone)" if args.graph == "scripted"
                                    else " (the real query graph on the sample docs)"))

    server = Server(args.graph, args.post_token_delay, args.words)
    try:
        post = asyncio.run(bench_post(server.base, args.clients, args.posts_per_client))
        results["post"] = post
        pace = f", answers of {args.words} tokens at {args.post_token_delay * 1000:g} ms/token" \
            if args.graph == "scripted" else ""
        print(f"POST /conversations, {args.clients} concurrent clients each reading its stream{pace}, "
              f"{post['requests']} requests: p50 {post['p50_ms']:.1f} ms, p95 {post['p95_ms']:.1f} ms, "
              f"max {post['max_ms']:.1f} ms (target p95 <= 50 ms)")
    finally:
        server.stop()

    if args.graph == "scripted":
        server = Server(args.graph, args.token_delay, args.words)
        try:
            from fieldguide.service.engine import new_event_loop

            # on the event loop the service runs turns on, so the difference is the HTTP side's
            with asyncio.Runner(loop_factory=new_event_loop) as runner:
                own = runner.run(generator_rate(args.token_delay, args.words, args.sse_runs))
            seen, tokens = asyncio.run(service_rate(server.base, args.sse_runs))
            results["sse"] = {"generator_ms_per_token": own, "service_ms_per_token": seen,
                              "overhead_ms_per_token": seen - own, "tokens": tokens}
            print(f"SSE: {tokens} tokens; generator {own:.3f} ms/token in process, {seen:.3f} ms/token "
                  f"through the service: overhead {seen - own:+.3f} ms/token (target <= 5 ms)")
        finally:
            server.stop()

    env = {"FIELDGUIDE_MAX_CONVERSATIONS": str(args.max_conversations)} if args.max_conversations else {}
    soak_server = Server(args.graph, 0.0, args.soak_words, env)
    try:
        started = time.perf_counter()
        curve = asyncio.run(soak(soak_server, args.soak, args.every, args.soak_concurrency))
        seconds = time.perf_counter() - started
    finally:
        soak_server.stop()
    retained = args.max_conversations or 500
    print(f"soak: {args.soak} questions in {seconds:.1f} s ({args.soak_concurrency} at a time); the server retains "
          f"the last {retained} conversations for replay; resident memory of the server:")
    for questions, rss in curve:
        print(f"  after {questions:5d} questions: {rss:8.1f} MB")
    reference = next((rss for q, rss in curve if q >= min(100, args.soak)), curve[0][1])
    final = curve[-1][1]
    change = (final - reference) / reference * 100
    results["soak"] = {"questions": args.soak, "seconds": seconds, "curve": curve,
                       "rss_after_100_mb": reference, "rss_final_mb": final, "change_percent": change}
    print(f"soak: RSS after question {min(100, args.soak)} {reference:.1f} MB, after question {args.soak} "
          f"{final:.1f} MB: {change:+.2f}% (target < 5%)")
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
