"""Evidence alone, on the contexts of stored answer lines: how many key facts the quotes carry.

    python benchmarks/tune_evidence.py QUESTIONS.jsonl ANSWERS.jsonl [QUESTIONS.jsonl ANSWERS.jsonl ...]
        [--set evidence_words=200] [--json]

The answer lines come from `fieldguide ask --batch` (any generator: only their `context` and
`standalone_question` are read). For each answerable turn whose key facts are all in its
context, the evidence step is run again on that context (same code, same embedding model) and
the share of turns whose key facts all land in the quotes is printed per file, with the mean
over the files: the figure evidence changes are judged by (docs/BENCHMARKS.md, "Choosing the
evidence parameters"). It takes seconds, against minutes for a whole `ask --batch`, because
nothing is searched and nothing is generated.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _normalise():
    """The scorer's own normalisation (shared/eval/answer_score.py beside the checkout)."""
    for candidate in (ROOT.parent / "shared" / "eval", ROOT / "shared" / "eval"):
        if (candidate / "answer_score.py").exists():
            sys.path.insert(0, str(candidate))
            import answer_score

            return answer_score
    raise SystemExit("answer_score.py not found beside the checkout (../shared/eval)")


def load_jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def evaluate(questions: str, answers: str, words_per_ask: int, embeddings, scorer) -> dict:
    from graph.resources import TextVectors
    from nodes.evidence import evidence_budget, evidence_markdown, select_evidence

    items = scorer.expand(load_jsonl(questions))
    lines = {a["id"]: a for a in load_jsonl(answers)}
    found_context = carried = 0
    words = []
    misses = []
    sentences = TextVectors(embeddings)  # the pipeline's own cache of sentence vectors

    for item in items:
        line = lines.get(item["id"])
        if not item["answerable"] or not line or line.get("abstain"):
            continue
        blocks = line.get("context") or []
        context = scorer.normalise("\n".join(" ".join(b.get("heading_path") or []) + "\n" + (b.get("text") or "")
                                             for b in blocks))
        facts = [scorer.normalise(f) for f in item.get("key_facts") or []]
        if not facts or not all(f in context for f in facts):
            continue
        found_context += 1
        question = line.get("standalone_question") or item["question"]
        chosen = select_evidence(question, blocks, evidence_budget(question, words_per_ask),
                                 embeddings.embed_query(question), sentences.embed)
        quoted = evidence_markdown(chosen) if chosen else ""
        words.append(len(scorer.content_words(quoted)))
        text = scorer.normalise(quoted)
        if all(f in text for f in facts):
            carried += 1
        else:
            misses.append(item["id"])
    return {"context_turns": found_context, "carried": carried,
            "carry": round(carried / found_context, 3) if found_context else None,
            "median_words": statistics.median(words) if words else None, "misses": misses}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", nargs="+", help="QUESTIONS.jsonl ANSWERS.jsonl, one pair per answer file")
    parser.add_argument("--set", action="append", default=[], metavar="evidence_words=N")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if len(args.pairs) % 2:
        parser.error("give questions and answers in pairs")
    from fieldguide.embedding import load_embeddings
    from fieldguide.settings import get_settings

    settings = get_settings()
    budget = settings.evidence_words
    for item in args.set:
        name, _, value = item.partition("=")
        if name != "evidence_words":
            parser.error(f"unknown setting {name}")
        budget = int(value)
    scorer = _normalise()
    embeddings = load_embeddings(settings)
    table = {answers: evaluate(questions, answers, budget, embeddings, scorer)
             for questions, answers in zip(args.pairs[::2], args.pairs[1::2])}
    carries = [row["carry"] for row in table.values() if row["carry"] is not None]
    if args.json:
        print(json.dumps({"files": table, "mean_carry": round(statistics.mean(carries), 3) if carries else None}))
        return 0
    for name, row in table.items():
        print(f"{name}: carried {row['carried']}/{row['context_turns']} = {row['carry']}, "
              f"median words {row['median_words']}; missed {' '.join(row['misses'])}")
    if carries:
        print(f"mean carry {statistics.mean(carries):.3f} (evidence_words {budget} per ask)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
