"""Retrieval metrics over result lines, scored against a question set.

Questions are JSON objects with `id`, `question`, `intent`, `answerable`, `gold_file`,
`gold_heading_path`, `key_facts` (and optionally `long_section`). Result lines are the
retrieval result lines of docs/architecture.md (`id`, `intent`, `abstain`, `context`, `timings_ms`).

Metrics (over answerable questions unless said otherwise):

* facts_all     share of questions whose key facts ALL occur in the final context
* facts_soft    mean share of key facts found in the final context
* file_hit      share with at least one context block from the gold file
* section_mrr   mean reciprocal rank of the first block from the gold file whose heading
                path is a prefix of the gold path, or the gold path a prefix of it
* false_abstain share where the system abstained (or handed over no context)
* abstain_ok    share of UNANSWERABLE questions where it abstained (None when there are none)
* intent_acc    share of all labelled questions whose predicted intent equals the label
* ctx_words     mean words of final context
* p50_ms/p95_ms retrieval latency from `timings_ms.total`

Facts are compared after normalising both sides: lower case, link targets dropped (the
link text kept), Markdown marks (`* _ ` ~ > # |`) replaced by blanks, blanks squeezed.
"""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

from fieldguide.words import link_texts

METRICS = ("facts_all", "facts_soft", "file_hit", "section_mrr", "false_abstain", "abstain_ok",
           "intent_acc", "ctx_words", "p50_ms", "p95_ms")

_MARKS = re.compile(r"[*_`~>#|]")
_BLANKS = re.compile(r"\s+")


def normalise(text: str) -> str:
    text = link_texts(text)
    text = _MARKS.sub(" ", text).replace("\u00a0", " ")
    return _BLANKS.sub(" ", text).strip().lower()


def docs_relative(path: str | None) -> str:
    """A source path as the question set writes it: `/` separators, no `./` or `docs/` prefix."""
    path = (path or "").replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path[len("docs/"):] if path.startswith("docs/") else path


def same_section(block_path: list[str] | None, gold_path: list[str] | None) -> bool:
    """One heading path is a prefix of the other (compared normalised; empty never matches)."""
    block = [normalise(h) for h in block_path or []]
    gold = [normalise(h) for h in gold_path or []]
    if not block or not gold:
        return False
    common = min(len(block), len(gold))
    return block[:common] == gold[:common]


def nearest_rank_percentile(values: list[float], q: float) -> float | None:
    """The value at rank round(q·(n-1)) of the sorted values (no interpolation)."""
    if not values:
        return None
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return ordered[index]


def read_jsonl(path: str | Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _abstained(result: dict) -> bool:
    return bool(result.get("abstain")) or not (result.get("context") or [])


def score(questions: list[dict], results: list[dict]) -> dict:
    """The metrics of one system's result lines on a question set (see the module doc)."""
    by_id = {r["id"]: r for r in results}
    answerable = [q for q in questions if q.get("answerable", True)]
    unanswerable = [q for q in questions if not q.get("answerable", True)]

    all_found = soft = file_hits = reciprocal_ranks = abstained = 0.0
    words: list[int] = []
    for question in answerable:
        result = by_id.get(question["id"], {})
        blocks = result.get("context") or []
        context = normalise("\n".join(b.get("text", "") for b in blocks))
        facts = [normalise(f) for f in question.get("key_facts", [])]
        found = sum(1 for f in facts if f and f in context)
        if facts:
            all_found += 1.0 if found == len(facts) else 0.0
            soft += found / len(facts)
        gold_file = docs_relative(question.get("gold_file"))
        in_gold_file = [docs_relative(b.get("source")) == gold_file for b in blocks]
        file_hits += 1.0 if any(in_gold_file) else 0.0
        for rank, (block, hit) in enumerate(zip(blocks, in_gold_file), start=1):
            if hit and same_section(block.get("heading_path"), question.get("gold_heading_path")):
                reciprocal_ranks += 1.0 / rank
                break
        abstained += 1.0 if _abstained(result) else 0.0
        words.append(sum(len(b.get("text", "").split()) for b in blocks))

    correctly_abstained = sum(1 for q in unanswerable if _abstained(by_id.get(q["id"], {})))
    labelled = [q for q in questions if q.get("intent") and q["id"] in by_id]
    intent_hits = sum(1 for q in labelled if by_id[q["id"]].get("intent") == q["intent"])
    totals = [float(r["timings_ms"]["total"]) for r in results
              if isinstance(r.get("timings_ms"), dict) and "total" in r["timings_ms"]]
    n = max(1, len(answerable))
    return {
        "questions": len(questions),
        "missing": sum(1 for q in questions if q["id"] not in by_id),
        "facts_all": round(all_found / n, 3),
        "facts_soft": round(soft / n, 3),
        "file_hit": round(file_hits / n, 3),
        "section_mrr": round(reciprocal_ranks / n, 3),
        "false_abstain": round(abstained / n, 3),
        "abstain_ok": round(correctly_abstained / len(unanswerable), 3) if unanswerable else None,
        "intent_acc": round(intent_hits / len(labelled), 3) if labelled else None,
        "ctx_words": round(statistics.mean(words), 1) if words else 0.0,
        "p50_ms": nearest_rank_percentile(totals, 0.5),
        "p95_ms": nearest_rank_percentile(totals, 0.95),
    }


SLICES = {
    "all": lambda q: True,
    "screen": lambda q: q.get("intent") == "screen",
    "conceptual": lambda q: q.get("intent") == "conceptual",
    "long_section": lambda q: bool(q.get("long_section")),
}


def score_slices(questions: list[dict], results: list[dict]) -> dict[str, dict]:
    """`score` on every slice of the question set (all, per labelled intent, long sections).

    Each slice is scored on its own questions and their result lines only, so its
    latency percentiles are those of the slice too.
    """
    scored = {}
    for name, keep in SLICES.items():
        subset = [q for q in questions if keep(q)]
        if not subset:
            continue
        ids = {q["id"] for q in subset}
        scored[name] = score(subset, [r for r in results if r.get("id") in ids])
    return scored
