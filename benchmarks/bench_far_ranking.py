"""Where the pipeline's scorer ranks the gold section among broad candidates, for far-worded
questions (the gaps seeds' "far" turns) and for a corpus's answerable questions.

    python benchmarks/bench_far_ranking.py --collection AB --seed tests/fixtures/gaps/seed_turns.jsonl \\
        --questions ../shared/corpora/actual-budget/questions.jsonl [--lexical-weight 0.35 0.0]

Candidates are those `fieldguide gaps` searches (`BroadSearch.candidates`: 30 dense and 30 hybrid), each
scored as cosine + W x the relative BM25 score (the offline scorer, `LexicalFallbackScorer`),
best score per section. Prints, per question set and weight, the mean reciprocal rank of the
gold section (gold file, heading path at or below the gold's) and the shares ranked 1st-3rd and
1st-5th. The collection must hold the corpus already (`fieldguide ingest DOCS --collection NAME`).
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def gold_rank(ranked: list[tuple[str, tuple[str, ...]]], row: dict) -> int | None:
    gold = row["gold_heading_path"]
    return next((n for n, (source, path) in enumerate(ranked, start=1)
                 if source == row["gold_file"] and list(path[:len(gold)]) == gold), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", required=True)
    parser.add_argument("--seed", type=Path, required=True, help="gaps seed turns (their 'far' group is used)")
    parser.add_argument("--questions", type=Path, required=True, help="the corpus's questions.jsonl")
    parser.add_argument("--lexical-weight", type=float, nargs="+", default=[0.35])
    parser.add_argument("--k", type=int, default=30, help="candidates per search kind (BroadSearch's)")
    args = parser.parse_args()

    from fieldguide.embedding import embed_questions
    from fieldguide.gaps import BroadSearch
    from fieldguide.reranker import LexicalFallbackScorer
    from fieldguide.retrieval import open_resources
    from fieldguide.settings import Settings

    read = lambda path: [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]  # noqa: E731
    sets = {"far-worded": [r for r in read(args.seed) if r.get("group") == "far"],
            "questions": [r for r in read(args.questions) if r.get("answerable", True)]}
    with open_resources(Settings(collection=args.collection)) as resources:
        broad, stats = BroadSearch(resources, k=args.k), resources.term_stats
        for name, rows in sets.items():
            vectors = embed_questions(resources.embeddings, [r["question"] for r in rows])
            ranks: dict[float, list[int | None]] = {w: [] for w in args.lexical_weight}
            for row, vector in zip(rows, vectors):
                candidates = broad.candidates(row["question"], vector)
                for weight in args.lexical_weight:
                    scores = LexicalFallbackScorer(weight).score(row["question"], candidates, term_stats=stats)
                    best: dict[tuple[str, tuple[str, ...]], float] = {}
                    for c, score in zip(candidates, scores):
                        key = (c["source"], tuple(c.get("heading_path") or ()))
                        best[key] = max(score, best.get(key, float("-inf")))
                    ranks[weight].append(gold_rank(sorted(best, key=lambda key: -best[key]), row))
            for weight, found in ranks.items():
                share = lambda top: sum(1 for r in found if r is not None and r <= top) / len(found)  # noqa: E731
                mrr = statistics.mean(1 / r if r else 0.0 for r in found)
                print(json.dumps({"set": name, "n": len(found), "lexical_weight": weight, "mrr": round(mrr, 3),
                                  "top_3": round(share(3), 2), "top_5": round(share(5), 2),
                                  "in_pool": round(share(10 ** 6), 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
