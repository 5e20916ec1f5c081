"""How far the calibration moves when part of the index changes: the figures behind
`fieldguide.calibration.RECALIBRATE_SHARE`.

On an ingested collection, the calibration is measured once on the whole index, then again with
whole files hidden (their chunks dropped from every probe's candidates, from the counts and from
the term statistics), for files drawn at random until the hidden chunks reach a share of the
index. Hiding a file is a harsher change than the edit it stands for (an edited file keeps most
of its words and sections), so the drift it shows is an upper bound for an edit of that share.

For each share the script prints the largest and the median change, over the draws, of
`rerank_min`, `abstain_margin` and `margin_unit`, and the change of the abstain threshold
(`rerank_min + abstain_margin`) as a share of the margin itself. The probes are embedded and
searched once (with room for the hidden chunks), so the draws cost no model or store calls.

    python benchmarks/bench_calibration_drift.py --collection NAME [--shares 0.01 0.02 0.05 0.1 0.2] [--draws 20]
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import Counter

FIGURES = ("rerank_min", "abstain_margin", "margin_unit")


class CachedQueries:
    """The probes' vectors, embedded once."""

    def __init__(self, embeddings):
        self.embeddings = embeddings
        self.vectors: dict[str, list[float]] = {}

    def embed_query(self, text: str):
        if text not in self.vectors:
            self.vectors[text] = self.embeddings.embed_query(text)
        return self.vectors[text]


class HiddenFiles:
    """The store as it would be without the chunks of `hidden` sources (for `calibrate`)."""

    def __init__(self, pools: dict[tuple, list[dict]], kinds: Counter, hidden: set[str], hidden_kinds: Counter):
        self.pools = pools  # probe vector -> candidates, best first, deep enough for any hidden set
        self.hidden = hidden
        self.kinds = kinds - hidden_kinds

    def count(self) -> int:
        return sum(self.kinds.values())

    def count_kind(self, kind: str) -> int:
        return self.kinds[kind]

    def near_vector(self, vector, k: int, content_kind: str | None = None) -> list[dict]:
        candidates = [c for c in self.pools[tuple(vector)] if c["source"] not in self.hidden]
        return candidates[:k]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", required=True)
    parser.add_argument("--shares", type=float, nargs="+", default=[0.01, 0.02, 0.05, 0.1, 0.2])
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from fieldguide.bm25 import TermStats, document_words
    from fieldguide.calibration import MARGIN_POOL, OFF_TOPIC_PROBES, RECALIBRATE_SHARE, calibrate
    from fieldguide.embedding import load_embeddings
    from fieldguide.reranker import load_reranker
    from fieldguide.settings import get_settings
    from fieldguide.store import open_store

    settings = get_settings().model_copy(update={"collection": args.collection})
    reranker = load_reranker(settings)
    queries = CachedQueries(load_embeddings(settings))
    with open_store(settings) as store:
        chunks = [dict(obj.properties) for obj in store.chunks.iterator(
            return_properties=["source", "heading_path", "text", "content_kind"])]
        total = len(chunks)
        if not total:
            sys.exit(f"collection {args.collection} is empty: ingest a docs folder into it first")
        deepest = MARGIN_POOL + int(max(args.shares) * total) + max(Counter(c["source"] for c in chunks).values())
        pools = {tuple(queries.embed_query(probe)): store.near_vector(queries.embed_query(probe), deepest)
                 for probe in OFF_TOPIC_PROBES}

    words = [document_words(c.get("heading_path"), c.get("text")) for c in chunks]
    per_source: dict[str, list[int]] = {}
    for index, chunk in enumerate(chunks):
        per_source.setdefault(chunk["source"], []).append(index)
    kinds = Counter(c["content_kind"] for c in chunks)

    def calibrated_without(hidden: set[str]) -> dict:
        kept = [words[i] for i, c in enumerate(chunks) if c["source"] not in hidden]
        hidden_kinds = Counter(chunks[i]["content_kind"] for s in hidden for i in per_source[s])
        view = HiddenFiles(pools, kinds, hidden, hidden_kinds)
        return calibrate(view, queries, reranker, TermStats.from_documents(kept)).to_dict()

    whole = calibrated_without(set())
    rng = random.Random(args.seed)
    sources = sorted(per_source)
    results = []
    for share in args.shares:
        drifts: dict[str, list[float]] = {name: [] for name in (*FIGURES, "threshold_over_margin")}
        hidden_shares = []
        for _ in range(args.draws):
            order = sources[:]
            rng.shuffle(order)
            hidden: set[str] = set()
            hidden_chunks = 0
            for source in order:  # whole files, until the share is reached
                if hidden_chunks >= share * total:
                    break
                hidden.add(source)
                hidden_chunks += len(per_source[source])
            measured = calibrated_without(hidden)
            hidden_shares.append(hidden_chunks / total)
            for name in FIGURES:
                drifts[name].append(abs(measured[name] - whole[name]))
            threshold = abs((measured["rerank_min"] + measured["abstain_margin"])
                            - (whole["rerank_min"] + whole["abstain_margin"]))
            drifts["threshold_over_margin"].append(threshold / whole["abstain_margin"] if whole["abstain_margin"] else 0)
        results.append({"target_share": share, "hidden_share_median": round(statistics.median(hidden_shares), 4),
                        **{f"{name}_max": round(max(values), 4) for name, values in drifts.items()},
                        **{f"{name}_median": round(statistics.median(values), 4) for name, values in drifts.items()}})
        print(json.dumps(results[-1]), file=sys.stderr)

    print(json.dumps({"collection": args.collection, "chunks": total, "files": len(sources), "draws": args.draws,
                      "recalibrate_share": RECALIBRATE_SHARE, "whole_index": {k: whole[k] for k in FIGURES},
                      "drift": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
