"""Instant search: latency per keystroke and quality, against Weaviate's own BM25 and hybrid search.

For each corpus (a folder with docs/ and questions.jsonl) the docs are ingested into a Weaviate
server of the benchmark's own (fresh data, free loopback ports), and the service is started on
it (`GET /search`, a real uvicorn on loopback). The queries are what a reader sends while typing
a question: the prefixes of each answerable question every `--step` characters (from 6), each a
keystroke-sized query, and the whole question.

* latency - p50/p95 milliseconds per query, end to end:
    search     `GET /search` over HTTP (embedding, vector search, the pipeline's scorer, sections,
               snippets, JSON), one request after another as a debounced box sends them;
    search_fn  the same search called in the process (the HTTP share is the difference);
    bm25       Weaviate's BM25 (`query.bm25`, the store's fields and weights: heading_path^2, text,
               embed_text), through the client;
    hybrid     Weaviate's hybrid search (alpha 0.5) with the query embedded by the same model;
* quality - section_mrr of the gold section (shared/eval/score.py's rule: the gold file and a heading
  path that is a prefix of the gold path or the reverse) among the first 10 sections, on the whole
  questions and on their first half (cut where it falls, mid-word too: what the box shows while the
  reader is still typing); `search_as_typed` is the search without completing the unfinished word.
* scale - the same latency at `--factor` times the first corpus (benchmarks/bench_scale.py's copies
  with distinct headings: every answer exists `--factor` times, so latency only).

    python benchmarks/bench_search.py CORPUS_DIR [CORPUS_DIR ...] [--factor 10] [--questions 40] [--step 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

TARGET_P95_MS = {"1x": 30.0, "10x": 60.0}
MRR_DEPTH = 10
FIRST_PREFIX = 6


def load_questions(path: Path, limit: int) -> list[dict]:
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [q for q in items if q.get("answerable", True) and q.get("gold_file")][:limit]


def prefixes(question: str, step: int) -> list[str]:
    return [question[:n] for n in range(FIRST_PREFIX, len(question), step)] + [question]


def percentile(values: list[float], q: float) -> float:
    from fieldguide.evaluation.metrics import nearest_rank_percentile

    return round(nearest_rank_percentile(values, q), 2)


def section_rank(sections: list[tuple[str, list[str]]], question: dict) -> float:
    """1/rank of the first section that is the gold one (score.py's rule), 0 when none is."""
    from score import clean_path, heading_match  # shared/eval/score.py (its folder is on the path)

    gold = clean_path(question["gold_file"])
    for rank, (source, path) in enumerate(sections[:MRR_DEPTH], start=1):
        if clean_path(source) == gold and heading_match(path, question.get("gold_heading_path") or []):
            return 1.0 / rank
    return 0.0


def sections_of(objects) -> list[tuple[str, list[str]]]:
    """Weaviate's ranked objects as sections, each once, best part first (as /search lists them)."""
    seen, out = set(), []
    for obj in objects:
        key = (obj.properties.get("source"), tuple(obj.properties.get("heading_path") or ()))
        if key not in seen:
            seen.add(key)
            out.append((key[0], list(key[1])))
    return out


class Systems:
    """The searches compared, over one collection."""

    def __init__(self, settings, base_url: str, service_app):
        import httpx

        self.http = httpx.Client(base_url=base_url, timeout=30)
        self.resources = service_app.state.service.resources
        self.store = self.resources.store
        self.settings = settings
        self.embeddings = self.resources.embeddings

    def search(self, query: str) -> list[tuple[str, list[str]]]:
        response = self.http.get("/search", params={"q": query, "limit": MRR_DEPTH})
        response.raise_for_status()
        return [(r["source"], r["heading_path"]) for r in response.json()["results"]]

    def search_fn(self, query: str, complete: bool = True) -> list[tuple[str, list[str]]]:
        from fieldguide.section_search import SearchIndex, clean_query, search_sections

        index = SearchIndex(self.store, self._vectors(), self.resources.reranker, self.resources.term_stats)
        found = search_sections(clean_query(query), index, limit=MRR_DEPTH, search_k=self.settings.search_k,
                                min_similarity=self.settings.min_similarity, complete=complete)
        return [(r["source"], r["heading_path"]) for r in found]

    def search_as_typed(self, query: str) -> list[tuple[str, list[str]]]:
        return self.search_fn(query, complete=False)

    def _vectors(self):
        from fieldguide.section_search import QueryVectors

        if not hasattr(self, "_query_vectors"):
            self._query_vectors = QueryVectors(self.embeddings)
        return self._query_vectors

    def bm25(self, query: str) -> list[tuple[str, list[str]]]:
        response = self.store.chunks.query.bm25(query=query, limit=3 * MRR_DEPTH,
                                                query_properties=["heading_path^2", "text", "embed_text"],
                                                return_properties=["source", "heading_path"])
        return sections_of(response.objects)

    def hybrid(self, query: str) -> list[tuple[str, list[str]]]:
        vector = [float(x) for x in self.embeddings.embed_query(query)]
        response = self.store.chunks.query.hybrid(query=query, vector=vector, alpha=0.5, limit=3 * MRR_DEPTH,
                                                  query_properties=["heading_path^2", "text", "embed_text"],
                                                  return_properties=["source", "heading_path"])
        return sections_of(response.objects)


LATENCY_SYSTEMS = ("search", "search_fn", "bm25", "hybrid")
QUALITY_SYSTEMS = ("search", "search_as_typed", "bm25", "hybrid")


def time_queries(systems: Systems, queries: list[str]) -> dict:
    """p50/p95 per system, the systems taking turns query by query (the same load for each)."""
    latencies: dict[str, list[float]] = {name: [] for name in LATENCY_SYSTEMS}
    for query in queries:
        for name in LATENCY_SYSTEMS:
            started = time.perf_counter()
            getattr(systems, name)(query)
            latencies[name].append((time.perf_counter() - started) * 1000.0)
    return {name: {"n": len(values), "p50": percentile(values, 0.5), "p95": percentile(values, 0.95)}
            for name, values in latencies.items()}


def quality(systems: Systems, questions: list[dict]) -> dict:
    out = {}
    for name in QUALITY_SYSTEMS:
        whole = [section_rank(getattr(systems, name)(q["question"]), q) for q in questions]
        half = [section_rank(getattr(systems, name)(q["question"][:max(FIRST_PREFIX, len(q["question"]) // 2)]), q)
                for q in questions]
        out[name] = {"section_mrr": round(statistics.mean(whole), 3), "half_typed_mrr": round(statistics.mean(half), 3)}
    return out


def ingest(docs: Path, settings, embeddings) -> dict:
    from ingest.pipeline import ingest_folder

    started = time.perf_counter()
    summary = ingest_folder(docs, settings, progress=False, embeddings=embeddings)
    return {"files": summary.files_seen, "chunks": summary.chunks_written,
            "ingest_seconds": round(time.perf_counter() - started, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", type=Path, nargs="+", help="folders with docs/ and questions.jsonl")
    parser.add_argument("--factor", type=int, default=10, help="scale of the first corpus's copy (0: none)")
    parser.add_argument("--questions", type=int, default=40, help="answerable questions per corpus, at most")
    parser.add_argument("--step", type=int, default=3, help="characters between two timed prefixes")
    parser.add_argument("--eval-dir", type=Path, default=None, help="folder of score.py (default: beside the corpora)")
    args = parser.parse_args()
    eval_dir = args.eval_dir or args.corpora[0].resolve().parents[1] / "eval"
    sys.path.insert(0, str(eval_dir))

    from bench_scale import build_corpus

    from fieldguide import weaviate_server
    from fieldguide.embedding import load_embeddings
    from fieldguide.service import create_app
    from fieldguide.settings import Settings
    from fieldguide_testing.serving import serve  # the app on a real uvicorn server on loopback

    base = Settings()
    embeddings = load_embeddings(base)
    figures: dict = {"cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
                     "load_average_at_start": [round(x, 2) for x in os.getloadavg()], "corpora": {}}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        server = Settings(data_dir=tmp / "server", weaviate_url=None,
                          weaviate_binary=base.weaviate_binary or weaviate_server.find_binary(base))
        http_port, grpc_port = weaviate_server.free_port(), weaviate_server.free_port()
        weaviate_server.start(server, http_port=http_port, grpc_port=grpc_port)
        try:
            runs = [(corpus.name, corpus / "docs", corpus, "1x") for corpus in args.corpora]
            if args.factor > 1:
                scaled = build_corpus(args.corpora[0] / "docs", tmp / "scaled", args.factor)
                runs.append((f"{args.corpora[0].name}-{args.factor}x", scaled, args.corpora[0], "10x"))
            for name, docs, corpus, size in runs:
                settings = base.model_copy(update={
                    "weaviate_url": f"http://127.0.0.1:{http_port}", "weaviate_grpc_port": grpc_port,
                    "collection": "BenchSearch" + "".join(ch for ch in name.title() if ch.isalnum()),
                    "data_dir": tmp / "data", "state_url": "memory://", "docs_dir": None})
                entry = ingest(docs, settings, embeddings)
                print(f"{name}: {entry['chunks']} chunks in {entry['ingest_seconds']}s", file=sys.stderr)
                questions = load_questions(corpus / "questions.jsonl", args.questions)
                queries = [p for q in questions for p in prefixes(q["question"], args.step)]
                app = create_app(settings)
                with serve(app) as url:
                    systems = Systems(settings, url, app)
                    systems.search("warm up the models")
                    systems.hybrid("warm up")
                    entry["load_average"] = round(os.getloadavg()[0], 2)
                    entry["latency_ms"] = time_queries(systems, queries)
                    if size == "1x":
                        entry["quality"] = quality(systems, questions)
                    entry["p95_target_ms"] = TARGET_P95_MS[size]
                    entry["p95_ok"] = entry["latency_ms"]["search"]["p95"] <= TARGET_P95_MS[size]
                    systems.http.close()
                figures["corpora"][name] = entry
                print(json.dumps({name: entry}), file=sys.stderr)
        finally:
            weaviate_server.stop(server)
    figures["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
