"""Durable state and scale: figures for restarts, the SQLite default, replicas and a Weaviate cluster.

    python benchmarks/bench_durable.py [restarts] [post] [replicas] [soak] [cluster] [--json]

Every service here is a real process (`fieldguide_testing.scripted_server`: the service over a
scripted graph, so figures measure the service and its state, not a model) on loopback;
Redis and Postgres are Debian's, started on free ports; the cluster is three weaviate-server
processes. With no section named, all run.

restarts  `--restarts` (20) times: a conversation is asked, its stream read halfway, the
          service SIGKILLed and started again on the same state, the stream resumed with
          Last-Event-ID. Every token the client got is compared with the conversation's log
          read afresh after the restart: lost = in the log but never received, repeated =
          received twice. Each interrupted turn must end with one error event.
post      POST /conversations p50/p95 with `--clients` clients each asking and reading its
          answer to the end, on the memory and the SQLite state alternately, `--rounds`
          rounds each, in one run; p95 ratio SQLite / memory (target <= 1.5).
replicas  Conversations per second through 1 and then 2 replicas sharing Redis and Postgres
          (each POST goes to one replica and its stream is read from the other). The
          scripted generator runs one answer at a time per replica and sleeps between its
          tokens, as a replica's own model would take its time: on two cores the generator's
          time, not the machine's, is then what one replica can do. Target >= 1.6x.
soak      `--soak` (1000) questions on the SQLite state, the server's resident memory every
          `--every`; growth from question 100 to the last (target < 5 %).
cluster   `--questions` (300) retrieval questions against three Weaviate nodes holding every
          chunk three times; the node in use is SIGKILLed after a third of them and started
          again after two thirds; failed questions and questions whose chunks differ from
          those before the kill (target 0). Needs the weaviate-server binary and the models.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

from bench_service import bench_post, soak  # noqa: E402  (the same measurements as the service benchmark)

from fieldguide_testing.scripted_server import ServiceProcess, scripted_answer  # noqa: E402


def sqlite_env(folder: str) -> dict:
    return {"FIELDGUIDE_STATE_URL": f"sqlite:///{folder}/state.sqlite", "FIELDGUIDE_DATA_DIR": folder}


def sse_events(response):
    """(id, event, data) of each event of an httpx streaming response, as they arrive."""
    event_id, name, data = None, "message", []
    for line in response.iter_lines():
        if line == "":
            if data:
                yield event_id, name, "\n".join(data)
            event_id, name, data = None, "message", []
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


# --- restarts ---------------------------------------------------------------------------------------

def bench_restarts(count: int, words: int, delay: float) -> dict:
    folder = tempfile.mkdtemp(prefix="fieldguide-bench-restarts-")
    service = ServiceProcess(sqlite_env(folder), args=["--token-delay", str(delay), "--words", str(words)],
                             log_path=f"{folder}/service.log")
    lost = repeated = wrong = unfinished = 0
    resumed_after = []
    with httpx.Client(timeout=60) as client:
        service.start()
        try:
            for n in range(count):
                started = client.post(service.base + "/conversations", json={"question": f"restart {n}"}).json()
                url = service.base + started["stream_url"]
                received = []
                with client.stream("GET", url) as response:
                    for event in sse_events(response):
                        received.append(event)
                        if sum(1 for e in received if e[1] == "token") >= words // 2:
                            break  # halfway through the answer
                service.kill()
                began = time.perf_counter()
                service.start()
                with client.stream("GET", url, headers={"Last-Event-ID": received[-1][0]}) as response:
                    received += list(sse_events(response))
                resumed_after.append(time.perf_counter() - began)
                with client.stream("GET", url) as response:  # the log itself, read afresh
                    log = list(sse_events(response))
                ids = [e[0] for e in received]
                repeated += sum(1 for e in received if e[1] == "token") - len({e[0] for e in received
                                                                                 if e[1] == "token"})
                got = {e[0] for e in received}
                lost += sum(1 for e in log if e[1] == "token" and e[0] not in got)
                tokens = "".join(json.loads(e[2])["text"] for e in received if e[1] == "token")
                wrong += not scripted_answer(words).replace("{turn}", "1").startswith(tokens)
                wrong += ids != [str(i) for i in range(1, len(ids) + 1)] or received != log
                unfinished += not (received[-1][1] == "error" and [e[1] for e in received].count("error") == 1)
        finally:
            service.stop()
    return {"restarts": count, "lost_tokens": lost, "repeated_tokens": repeated, "inconsistent_streams": wrong,
            "turns_without_one_error_event": unfinished,
            "restart_to_resumed_s_median": statistics.median(resumed_after)}


# --- POST latency: memory against SQLite ---------------------------------------------------------------

def bench_post_states(rounds: int, clients: int, per_client: int, words: int, delay: float) -> dict:
    results: dict[str, list[dict]] = {"memory": [], "sqlite": []}
    for _ in range(rounds):
        for state in ("memory", "sqlite"):  # alternately, so the machine's load hits both alike
            folder = tempfile.mkdtemp(prefix="fieldguide-bench-post-")
            env = sqlite_env(folder) if state == "sqlite" else {"FIELDGUIDE_STATE_URL": "memory://",
                                                                   "FIELDGUIDE_DATA_DIR": folder}
            with ServiceProcess(env, args=["--token-delay", str(delay), "--words", str(words)]) as service:
                results[state].append(asyncio.run(bench_post(service.base, clients, per_client)))
    summary = {state: {"p50_ms": statistics.median(r["p50_ms"] for r in runs),
                       "p95_ms": statistics.median(r["p95_ms"] for r in runs),
                       "p95_runs_ms": [round(r["p95_ms"], 1) for r in runs]} for state, runs in results.items()}
    summary["p95_ratio_sqlite_over_memory"] = summary["sqlite"]["p95_ms"] / summary["memory"]["p95_ms"]
    return summary


# --- replicas behind Redis --------------------------------------------------------------------------------

async def converse_through(bases: list[str], clients: int, seconds: float) -> tuple[int, int, float]:
    """Clients ask and read to the end, for `seconds`: POST on one replica, stream from the next."""
    done = failed = 0
    stop_at = time.perf_counter() + seconds
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=4 * clients)) as client:
        async def worker(n: int) -> None:
            nonlocal done, failed
            turn = n
            while time.perf_counter() < stop_at:
                submit, stream = bases[turn % len(bases)], bases[(turn + 1) % len(bases)]
                turn += 1
                response = await client.post(submit + "/conversations", json={"question": f"client {n}"})
                last = None
                async with client.stream("GET", stream + response.json()["stream_url"]) as events:
                    async for line in events.aiter_lines():
                        if line.startswith("event:"):
                            last = line[6:].strip()
                if last == "done":
                    done += 1
                else:
                    failed += 1

        began = time.perf_counter()
        await asyncio.gather(*(worker(n) for n in range(clients)))
        return done, failed, time.perf_counter() - began


def bench_replicas(clients: int, seconds: float, words: int, delay: float) -> dict:
    from fieldguide_testing.local_servers import LocalPostgres, LocalRedis

    redis, postgres = LocalRedis().start(), LocalPostgres().start()
    figures = {}
    try:
        for count in (1, 2):
            import redis as redis_client

            redis_client.Redis.from_url(redis.url).flushdb()
            env = {"FIELDGUIDE_STATE_URL": redis.url, "FIELDGUIDE_CHECKPOINT_URL": postgres.url,
                   "FIELDGUIDE_DATA_DIR": tempfile.mkdtemp(prefix="fieldguide-bench-replicas-")}
            args = ["--token-delay", str(delay), "--words", str(words), "--one-at-a-time"]
            replicas = [ServiceProcess(env, args=args).start() for _ in range(count)]
            try:
                done, failed, elapsed = asyncio.run(converse_through([r.base for r in replicas], clients, seconds))
            finally:
                for replica in replicas:
                    replica.stop()
            figures[f"{count}_replica{'s' if count > 1 else ''}"] = {
                "conversations": done, "failed": failed, "seconds": round(elapsed, 2),
                "per_second": done / elapsed}
    finally:
        redis.close()
        postgres.close()
    one, two = figures["1_replica"]["per_second"], figures["2_replicas"]["per_second"]
    figures["speedup"] = two / one
    figures["generator_seconds_per_answer"] = words * delay
    return figures


# --- soak on the durable store ----------------------------------------------------------------------------

def bench_soak(questions: int, every: int, concurrency: int, words: int) -> dict:
    folder = tempfile.mkdtemp(prefix="fieldguide-bench-soak-")
    with ServiceProcess(sqlite_env(folder), args=["--words", str(words)]) as service:
        began = time.perf_counter()
        curve = asyncio.run(soak(service, questions, every, concurrency))
        seconds = time.perf_counter() - began
        running_mb = sum(f.stat().st_size for f in Path(folder).glob("state.sqlite*")) / 1e6
    size_mb = sum(f.stat().st_size for f in Path(folder).glob("state.sqlite*")) / 1e6  # (stopped: log emptied)
    reference = next((rss for q, rss in curve if q >= min(100, questions)), curve[0][1])
    return {"questions": questions, "seconds": seconds, "curve": curve, "rss_after_100_mb": reference,
            "rss_final_mb": curve[-1][1], "change_percent": (curve[-1][1] - reference) / reference * 100,
            "state_files_mb_running": running_mb, "state_files_mb_stopped": size_mb}


# --- a Weaviate node lost --------------------------------------------------------------------------------

def bench_cluster(questions: int) -> dict:
    import signal

    from graph.graph import build_retrieval_graph
    from graph.resources import Resources
    from ingest.pipeline import ingest_folder

    from fieldguide import weaviate_server
    from fieldguide.embedding import load_embeddings
    from fieldguide.settings import Settings
    from fieldguide.store import open_store

    data = Path(tempfile.mkdtemp(prefix="fieldguide-bench-cluster-"))
    binary = weaviate_server.find_binary(Settings(weaviate_url=None))  # where `fieldguide weaviate build` put it
    settings = Settings(data_dir=data, weaviate_url=None, weaviate_binary=binary, local_nodes=3,
                        local_http_port=weaviate_server.free_port(),
                        local_grpc_port=weaviate_server.free_port(), replication_factor=3, consistency_level="QUORUM",
                        collection="BenchCluster", docs_dir=ROOT / "fieldguide" / "sample_docs")
    embeddings = load_embeddings(settings)
    try:
        weaviate_server.start(settings)
        with open_store(settings) as store:
            ingest_folder(settings.docs_dir, settings, store=store, embeddings=embeddings, progress=False)
            resources = Resources(settings, store=store, embeddings=embeddings)
            graph, config = build_retrieval_graph(), {"configurable": {"resources": resources}}
            records = store.chunks.query.fetch_objects(limit=1000, return_properties=["heading_path"]).objects
            asked = sorted({"How do I use " + " > ".join(r.properties["heading_path"]) + "?" for r in records})

            def ask(question):
                return [b["chunk_id"] for b in graph.invoke({"question": question}, config)["context"]]

            expected = {q: ask(q) for q in asked}
            failed = different = 0
            latencies, down_latencies = [], []
            killed = None
            for n in range(questions):
                if n == questions // 3:
                    port = store.nodes.node.http_port
                    killed = next(node for node in weaviate_server.cluster_nodes(settings)
                                  if node["http_port"] == port)
                    os.kill(killed["pid"], signal.SIGKILL)
                if n == 2 * questions // 3:
                    weaviate_server.start(settings)
                question = asked[n % len(asked)]
                began = time.perf_counter()
                try:
                    different += ask(question) != expected[question]
                except Exception as exc:  # what the target forbids
                    failed += 1
                    print(f"  question {n} failed: {exc!r}", file=sys.stderr)
                (down_latencies if questions // 3 <= n < 2 * questions // 3 else latencies).append(
                    (time.perf_counter() - began) * 1000)
    finally:
        weaviate_server.stop(settings)
    return {"questions": questions, "down_while": f"{questions // 3}..{2 * questions // 3 - 1}",
            "failed": failed, "different_chunks": different, "killed": killed["name"],
            "latency_ms_p50_all_up": statistics.median(latencies),
            "latency_ms_p50_one_down": statistics.median(down_latencies),
            "latency_ms_max_one_down": max(down_latencies)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sections", nargs="*", metavar="SECTION",
                        help="restarts, post, replicas, soak, cluster (default: all)")
    parser.add_argument("--restarts", type=int, default=20)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--posts-per-client", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--replica-clients", type=int, default=8)
    parser.add_argument("--replica-seconds", type=float, default=30)
    parser.add_argument("--replica-words", type=int, default=40)
    parser.add_argument("--replica-token-delay", type=float, default=0.01)
    parser.add_argument("--soak", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("DISABLE_TELEMETRY", "true")
    everything = ["restarts", "post", "replicas", "soak", "cluster"]
    sections = args.sections or everything
    if set(sections) - set(everything):
        parser.error(f"unknown sections {sorted(set(sections) - set(everything))}: choose from {everything}")
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} "
          f"({os.cpu_count()} cores)")
    results: dict = {}
    if "restarts" in sections:
        r = results["restarts"] = bench_restarts(args.restarts, words=200, delay=0.005)
        print(f"restarts: {r['restarts']} SIGKILLs mid-answer on the SQLite state: {r['lost_tokens']} tokens lost, "
              f"{r['repeated_tokens']} repeated, {r['inconsistent_streams']} streams differing from the log, "
              f"{r['turns_without_one_error_event']} interrupted turns without exactly one error event; "
              f"restart to resumed stream {r['restart_to_resumed_s_median']:.2f} s (median)")
    if "post" in sections:
        r = results["post"] = bench_post_states(args.rounds, args.clients, args.posts_per_client, words=100,
                                                delay=0.02)
        print(f"POST /conversations, {args.clients} clients reading answers of 100 tokens at 20 ms/token, "
              f"{args.rounds} alternating rounds of {args.clients * args.posts_per_client} requests:")
        for state in ("memory", "sqlite"):
            print(f"  {state:7s} p50 {r[state]['p50_ms']:.1f} ms, p95 {r[state]['p95_ms']:.1f} ms "
                  f"(per round {r[state]['p95_runs_ms']})")
        print(f"  p95 SQLite / memory: {r['p95_ratio_sqlite_over_memory']:.2f} (target <= 1.5)")
    if "replicas" in sections:
        r = results["replicas"] = bench_replicas(args.replica_clients, args.replica_seconds, args.replica_words,
                                                 args.replica_token_delay)
        print(f"replicas behind Redis, {args.replica_clients} clients for {args.replica_seconds:g} s, one answer at a "
              f"time per replica, {r['generator_seconds_per_answer']:.2f} s of generator per answer:")
        for key in ("1_replica", "2_replicas"):
            print(f"  {key.replace('_', ' ')}: {r[key]['conversations']} conversations in {r[key]['seconds']} s = "
                  f"{r[key]['per_second']:.2f}/s ({r[key]['failed']} failed)")
        print(f"  speedup {r['speedup']:.2f}x (target >= 1.6)")
    if "soak" in sections:
        r = results["soak"] = bench_soak(args.soak, args.every, 4, words=60)
        print(f"soak on the SQLite state: {r['questions']} questions in {r['seconds']:.1f} s, state files "
              f"{r['state_files_mb_running']:.1f} MB at the end (database and write-ahead log), "
              f"{r['state_files_mb_stopped']:.1f} MB once stopped; resident memory of the server:")
        for questions, rss in r["curve"]:
            print(f"  after {questions:5d} questions: {rss:8.1f} MB")
        print(f"  RSS after question 100 {r['rss_after_100_mb']:.1f} MB, after {r['questions']} "
              f"{r['rss_final_mb']:.1f} MB: {r['change_percent']:+.2f}% (target < 5%)")
    if "cluster" in sections:
        r = results["cluster"] = bench_cluster(args.questions)
        print(f"cluster: {r['questions']} retrieval questions, node {r['killed']} (the one in use) SIGKILLed for "
              f"questions {r['down_while']}: {r['failed']} failed, {r['different_chunks']} with other chunks; "
              f"p50 {r['latency_ms_p50_all_up']:.0f} ms with all up, {r['latency_ms_p50_one_down']:.0f} ms "
              f"(max {r['latency_ms_max_one_down']:.0f} ms) with one down")
    print(f"load average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
