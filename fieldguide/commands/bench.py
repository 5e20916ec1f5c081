"""`fieldguide bench [--docs DIR] [--questions Q] [--soak N] [--out DIR]`."""
from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("Benchmark ingest throughput (against the raw encoder), per-node latency, time to first token, "
        "tokens per second, concurrent conversations and a memory soak; prints and writes bench.json.")

SAMPLE_DOCS = Path(__file__).resolve().parent.parent / "sample_docs"
SAMPLE_QUESTIONS = [
    "Where do I change the price of a booking?",
    "Why does a booking move from pending to confirmed?",
    "How do I add a vehicle to the fleet list?",
    "What happens to the price when a booking is extended?",
    "Which settings control email notifications?",
]
ALL_PARTS = ("ingest", "nodes", "generate", "service")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--docs", type=Path, metavar="DIR", help="Markdown folder (default: the bundled sample docs)")
    parser.add_argument("--questions", type=Path, metavar="Q.jsonl",
                        help="questions, one {\"question\": ...} a line (default: a few about the sample docs)")
    parser.add_argument("--collection", metavar="NAME", help="collection to query (default: one named after DIR)")
    parser.add_argument("--soak", type=int, default=50, metavar="N", help="questions in the memory soak (default 50; 0: none)")
    parser.add_argument("--concurrent", type=int, default=20, metavar="N",
                        help="concurrent conversations against the service (default 20; 0: none)")
    parser.add_argument("--answers", type=int, default=5, metavar="N",
                        help="answers generated in-process for time to first token and tokens/s (default 5)")
    parser.add_argument("--answer-tokens", type=int, default=128, metavar="N",
                        help="longest answer, in tokens, for generation and the service (default 128)")
    parser.add_argument("--only", nargs="+", choices=ALL_PARTS, metavar="PART",
                        help=f"run only these parts: {', '.join(ALL_PARTS)}")
    parser.add_argument("--out", type=Path, default=Path("bench-out"), metavar="DIR",
                        help="where bench.json and soak_rss.png go (default ./bench-out)")


def run(args) -> int:
    import json
    import os
    import sys
    import time

    docs = args.docs or SAMPLE_DOCS
    if not docs.is_dir():
        print(f"fieldguide bench: {docs} is not a directory", file=sys.stderr)
        return 2
    try:
        if args.questions:
            from fieldguide.evaluation.metrics import read_jsonl

            items = read_jsonl(args.questions)
            questions = [str(q["question"]) for q in items if q.get("answerable", True)]
        else:
            items, questions = [{"id": f"s-{i}", "question": q} for i, q in enumerate(SAMPLE_QUESTIONS)], SAMPLE_QUESTIONS
        if not questions:
            raise ValueError("no questions")
    except (OSError, ValueError, KeyError) as exc:
        print(f"fieldguide bench: {args.questions}: {exc}", file=sys.stderr)
        return 2

    from fieldguide.embedding import load_embeddings
    from fieldguide.errors import FieldguideError
    from fieldguide.evaluation import bench
    from fieldguide.evaluation.runner import auto_collection, ingest, retrieve_all
    from fieldguide.settings import get_settings

    parts = set(args.only or ALL_PARTS)
    settings = get_settings().model_copy(update={"collection": args.collection or auto_collection(docs)})
    log = lambda message: print(message, file=sys.stderr)  # noqa: E731
    figures: dict = {"docs": f"{docs.resolve().parent.name}/{docs.name}", "questions": len(questions), "cpus": os.cpu_count(),
                     "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
                     "collection": settings.collection}
    started = time.perf_counter()
    try:
        if "ingest" in parts:
            log("ingest: full ingest vs raw encoder (benchmarks/bench_ingest.py)")
            figures["ingest"] = bench.bench_ingest(docs, f"{settings.collection}Bench")
        if parts & {"nodes", "generate", "service"}:
            ingest(docs, settings, embeddings=load_embeddings(settings), log=log)  # incremental: cheap when done
        if "nodes" in parts:
            log(f"nodes: retrieval of {len(items)} questions")
            lines = retrieve_all(items, settings, {"fieldguide": {}})["fieldguide"]
            figures["node_latency_ms"] = bench.node_latency(lines)
        if "generate" in parts and args.answers:
            log(f"generate: {args.answers} answers with the chat model")
            figures["generation"] = bench.bench_generation(questions[:args.answers], settings, args.answer_tokens)
        if "service" in parts and (args.concurrent or args.soak):
            figures["service"] = bench.bench_service(docs, settings, questions, concurrent=args.concurrent,
                                                     soak_n=args.soak, max_answer_tokens=args.answer_tokens,
                                                     out_dir=args.out, log=log)
    except (FieldguideError, RuntimeError) as exc:
        print(f"fieldguide bench: {exc}", file=sys.stderr)
        return 1
    figures["seconds"] = round(time.perf_counter() - started, 1)
    figures["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(bench.summary(figures))
    print(f"wrote {args.out / 'bench.json'}" + (" and soak_rss.png" if (args.out / "soak_rss.png").exists()
                                                 and "soak" in figures.get("service", {}) else ""))
    return 0
