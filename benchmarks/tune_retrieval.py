"""Sweep the retrieval knobs over a question set and print score.py's metrics per setting.

    python benchmarks/tune_retrieval.py --questions QUESTIONS.jsonl --score SCORE_PY \
        [--collection NAME] [--grid min_similarity=0.2,0.3 max_chunks=3,4 ...]

Models and the store are loaded once; every setting runs the real retrieval graph.
Also prints, per setting, the median total against the median of the model calls
(embed + search + rerank) measured in the same run.
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import statistics


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--score", required=True, help="path of score.py")
    ap.add_argument("--collection")
    ap.add_argument("--grid", nargs="*", default=[])
    ap.add_argument("--out", help="write the result lines of the last setting here")
    args = ap.parse_args()

    from fieldguide.retrieval import open_resources, result_line, retrieve
    from fieldguide.settings import get_settings
    from graph.graph import build_retrieval_graph

    score = load_score(args.score)
    questions = [json.loads(line) for line in open(args.questions, encoding="utf-8") if line.strip()]
    settings = get_settings()
    if args.collection:
        settings = settings.model_copy(update={"collection": args.collection})
    grid = parse_grid(args.grid)
    names = list(grid)
    retrieval_graph = build_retrieval_graph()
    with open_resources(settings) as resources:
        resources.warm_up(chat=False)
        for values in itertools.product(*(grid[n] for n in names)) if names else [()]:
            overrides = dict(zip(names, values))
            lines = []
            for q in questions:
                state, total = retrieve(retrieval_graph, q["question"], resources, overrides)
                lines.append(result_line(q["id"], state, total))
            table = score.score(questions, lines)
            models = statistics.median(sum(l["timings_ms"].get(k, 0.0) for k in ("embed", "search", "rerank"))
                                       for l in lines)
            long = [q for q in questions if q.get("long_section")]
            long_facts = score.score(long, [l for l in lines if l["id"] in {q["id"] for q in long}])["facts_all"]
            print(json.dumps({"options": overrides, **{k: table[k] for k in (
                "facts_all", "facts_soft", "section_mrr", "false_abstain", "abstain_ok", "intent_acc",
                "ctx_words", "p50_ms")}, "long_facts_all": long_facts, "model_p50_ms": round(models, 2)}),
                flush=True)
            if args.out:
                with open(args.out, "w", encoding="utf-8") as fh:
                    fh.writelines(json.dumps(l) + "\n" for l in lines)


if __name__ == "__main__":
    main()
