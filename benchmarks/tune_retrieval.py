"""Sweep the retrieval knobs over one or more corpora and print score.py's metrics per setting.

    python benchmarks/tune_retrieval.py --score SCORE_PY \
        --corpus COLLECTION=QUESTIONS.jsonl [--corpus COLLECTION2=QUESTIONS2.jsonl ...] \
        [--grid max_chunks=3,4 rank_window=2,3 ...]

Each corpus is an ingested collection and its question set (`fieldguide ingest DOCS --collection
NAME` first). Models are loaded once and every setting runs the real retrieval graph on every
corpus; one line per corpus and setting, then one `"corpus": "mean"` line with the mean of the
corpora (each weighted alike): choose defaults on that line, never on one corpus. Per setting
and corpus it also prints facts_all on the long-section questions and the median retrieval total
beside the median of its model calls (embed + search + rerank) measured in the same run.
(`--questions Q.jsonl --collection NAME` still runs a single corpus.)
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import statistics

METRICS = ("facts_all", "facts_soft", "section_mrr", "false_abstain", "abstain_ok", "intent_acc", "ctx_words", "p50_ms")


def load_score(path: str):
    spec = importlib.util.spec_from_file_location("score", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_grid(items: list[str]) -> dict[str, list]:
    grid = {}
    for item in items:
        name, _, values = item.partition("=")
        grid[name] = [json.loads(v) if v not in ("true", "false") else v == "true" for v in values.split(",")]
    return grid


def parse_corpora(args) -> list[tuple[str, str]]:
    corpora = []
    for item in args.corpus or []:
        collection, sep, questions = item.partition("=")
        if not sep:
            raise SystemExit(f"--corpus {item!r}: expected COLLECTION=QUESTIONS.jsonl")
        corpora.append((collection, questions))
    if args.questions:
        corpora.append((args.collection, args.questions))
    if not corpora:
        raise SystemExit("give --corpus COLLECTION=QUESTIONS.jsonl (repeatable) or --questions")
    return corpora


def measure(score, graph, resources, questions, overrides) -> dict:
    from fieldguide.retrieval import result_line, retrieve

    lines = []
    for q in questions:
        state, total = retrieve(graph, q["question"], resources, overrides)
        lines.append(result_line(q["id"], state, total))
    table = score.score(questions, lines)
    models = statistics.median(sum(line["timings_ms"].get(k, 0.0) for k in ("embed", "search", "rerank"))
                               for line in lines)
    long = [q for q in questions if q.get("long_section")]
    long_ids = {q["id"] for q in long}
    long_facts = score.score(long, [line for line in lines if line["id"] in long_ids])["facts_all"] if long else None
    return {**{k: table[k] for k in METRICS}, "long_facts_all": long_facts, "model_p50_ms": round(models, 2)}, lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", action="append", metavar="COLLECTION=QUESTIONS.jsonl")
    ap.add_argument("--questions", help="one question set (with --collection)")
    ap.add_argument("--collection")
    ap.add_argument("--score", required=True, help="path of score.py")
    ap.add_argument("--grid", nargs="*", default=[])
    ap.add_argument("--out", help="write the result lines of the last setting here (the last corpus's)")
    args = ap.parse_args()

    from fieldguide.retrieval import open_resources
    from fieldguide.settings import get_settings
    from graph.graph import build_retrieval_graph

    score = load_score(args.score)
    corpora = parse_corpora(args)
    grid = parse_grid(args.grid)
    names = list(grid)
    graph = build_retrieval_graph()
    opened = []
    try:
        for collection, questions_path in corpora:
            settings = get_settings()
            if collection:
                settings = settings.model_copy(update={"collection": collection})
            resources = open_resources(settings).__enter__()
            opened.append(resources)
            resources.warm_up(chat=False)
        questions = [[json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
                     for _, path in corpora]
        for values in itertools.product(*(grid[n] for n in names)) if names else [()]:
            overrides = dict(zip(names, values))
            rows, lines = [], []
            for (collection, _), resources, qs in zip(corpora, opened, questions):
                row, lines = measure(score, graph, resources, qs, overrides)
                rows.append(row)
                print(json.dumps({"corpus": collection, "options": overrides, **row}), flush=True)
            if len(rows) > 1:
                mean = {k: (round(statistics.mean(r[k] for r in rows), 3)
                            if all(isinstance(r[k], (int, float)) for r in rows) else None) for k in rows[0]}
                print(json.dumps({"corpus": "mean", "options": overrides, **mean}), flush=True)
            if args.out:
                with open(args.out, "w", encoding="utf-8") as fh:
                    fh.writelines(json.dumps(line) + "\n" for line in lines)
    finally:
        for resources in opened:
            resources.close()


if __name__ == "__main__":
    main()
