"""How fast the console's charts come back from a busy store, and how fast handoffs are delivered.

    python benchmarks/bench_console.py [--turns 20000] [--days 90] [--handoffs 200]

Seeds a SQLite state (the default backend) with `--turns` turns spread over `--days` days, a
vote on every fourth and a handoff on every twentieth, serves the app (scripted graph: no index,
so the gap and stale charts are left out) on loopback and prints the median and worst time of
each per-day chart over five reads of the whole window. Then posts `--handoffs` handoffs to a
webhook on loopback and prints how long until all were delivered. Figures, not assertions.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from fieldguide_testing.receivers import WebhookReceiver, wait_for  # noqa: E402
from fieldguide_testing.serving import make_app, serve  # noqa: E402

TOKEN = "benchmark-console-token-0123456789"
SECRET = "benchmark-secret"


def seed(state, turns: int, days: int) -> None:
    rng = random.Random(7)
    now = time.time()
    store = state.turns
    for n in range(turns):
        at = now - rng.random() * days * 86400
        cid = f"c{n // 3}"
        record = store.start(cid, f"Question {n} about the booking form?", started_at=at)
        verdict = rng.choice(["covered", "covered", "partial", "not_covered"])
        store.finish(record.finish("done", {"abstain": verdict == "not_covered", "coverage": verdict,
                                            "answer": "An answer [1].",
                                            "citations": [{"n": 1, "source": "a.md", "heading_path": ["A"]}]}))
        if n % 4 == 0:
            store.add_feedback(cid, record.turn, rng.choice(["up", "down"]), at=at + 30)
        if n % 20 == 0:
            state.outbox.add(f"h-{n}", ["webhook"], {"contact": "x@example.org"}, now=at + 60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--handoffs", type=int, default=200)
    args = parser.parse_args()

    app = make_app(console_token=TOKEN)
    started = time.perf_counter()
    seed(app.state.service.state, args.turns, args.days)
    print(f"seeded {args.turns} turns over {args.days} days in {time.perf_counter() - started:.1f} s")
    with serve(app) as base, httpx.Client(timeout=120, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        for name in ("summary", "questions", "coverage", "feedback", "handoffs", "coverage.csv"):
            times = []
            for _ in range(5):
                began = time.perf_counter()
                response = client.get(f"{base}/console/api/{name}", params={"days": args.days})
                times.append((time.perf_counter() - began) * 1000)
                response.raise_for_status()
            print(f"GET /console/api/{name:<13} days={args.days}: median {statistics.median(times):7.1f} ms, "
                  f"worst {max(times):7.1f} ms")

    webhook = WebhookReceiver(SECRET.encode()).start()
    try:
        app = make_app(handoff_webhook_url=webhook.url, handoff_secret=SECRET)
        store = app.state.service.state.turns
        for n in range(args.handoffs):
            record = store.start(f"h{n}", f"Question {n}?")
            store.finish(record.finish("done", {"abstain": True, "answer": "Not covered."}))
        with serve(app) as base, httpx.Client(timeout=30) as client:
            began = time.perf_counter()
            for n in range(args.handoffs):
                client.post(f"{base}/conversations/h{n}/handoff", json={"turn": 1, "contact": "x@example.org"}
                            ).raise_for_status()
            posted = time.perf_counter() - began
            wait_for(lambda: len(webhook.received) >= args.handoffs, 120)
            delivered = time.perf_counter() - began
        print(f"{args.handoffs} handoffs: posted (stored, 202) in {posted:.2f} s ({posted / max(1, args.handoffs) * 1000:.1f} ms "
              f"each), all delivered after {delivered:.2f} s; {len(set(webhook.ids()))} distinct ids received, "
              f"{len(webhook.received)} requests")
    finally:
        webhook.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
