"""fieldguide's metrics agree with the reference scorer (shared/eval/score.py beside the repository)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from fieldguide.evaluation.metrics import normalise, same_section, score, score_slices

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "eval" / "score.py"

QUESTIONS = [
    {"id": "a", "question": "Where is the price field?", "intent": "screen", "answerable": True,
     "gold_file": "guide/pricing.md", "gold_heading_path": ["Pricing", "Price field"],
     "key_facts": ["the **price** is rounded", "see [the list](x.md) below"], "long_section": True},
    {"id": "b", "question": "Why does it roll over?", "intent": "conceptual", "answerable": True,
     "gold_file": "docs/budget.md", "gold_heading_path": ["Budget"], "key_facts": ["money rolls over", "absent"]},
    {"id": "c", "question": "How does it sync?", "intent": "conceptual", "answerable": True,
     "gold_file": "sync.md", "gold_heading_path": ["Sync", "Devices"], "key_facts": ["end-to-end"]},
    {"id": "d", "question": "Can it fly?", "intent": "screen", "answerable": False,
     "gold_file": "", "gold_heading_path": [], "key_facts": []},
    {"id": "e", "question": "Can it swim?", "intent": "conceptual", "answerable": False,
     "gold_file": "", "gold_heading_path": [], "key_facts": []},
]


def block(source, path, text):
    return {"chunk_id": f"{source}#{len(text)}", "source": source, "heading_path": path, "text": text}


RESULT_SETS = {
    "mixed": [
        {"id": "a", "intent": "screen", "abstain": False, "timings_ms": {"total": 30.0},
         "context": [block("other.md", ["Other"], "noise words here"),
                     block("./guide/pricing.md", ["pricing"], "The PRICE is  rounded; see the list below")]},
        {"id": "b", "intent": "ambiguous", "abstain": False, "timings_ms": {"total": 10.0},
         "context": [block("budget.md", ["Budget", "Rollover"], "Your money rolls\u00a0over each month.")]},
        {"id": "c", "intent": "conceptual", "abstain": True, "timings_ms": {"total": 50.0}, "context": []},
        {"id": "d", "intent": "screen", "abstain": True, "timings_ms": {"total": 20.0}, "context": []},
        {"id": "e", "intent": "screen", "abstain": False, "timings_ms": {"total": 40.0},
         "context": [block("x.md", [], "something")]},
    ],
    # a baseline's lines: no intent, never abstains, one question missing, no timings on one line
    "baseline": [
        {"id": "a", "intent": None, "abstain": False, "timings_ms": {"total": 3.5},
         "context": [block("guide/pricing.md", ["Pricing", "Price field", "More"], "the price is rounded")]},
        {"id": "b", "intent": None, "abstain": False,
         "context": [block("budget.md", [], "money rolls over, absent")]},
        {"id": "d", "intent": None, "abstain": False, "timings_ms": {"total": 1.25},
         "context": [block("x.md", ["X"], "fly")]},
    ],
    "empty": [],
}


def load_reference():
    if not REFERENCE.is_file():
        pytest.skip("the reference scorer shared/eval/score.py is not beside this checkout")
    spec = importlib.util.spec_from_file_location("reference_score", REFERENCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(RESULT_SETS))
def test_agrees_with_reference_scorer(name, tmp_path):
    reference = load_reference()
    results = RESULT_SETS[name]
    # the reference reads files: go through them, as its users do
    questions_file, results_file = tmp_path / "q.jsonl", tmp_path / "r.jsonl"
    questions_file.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    results_file.write_text("".join(json.dumps(r) + "\n" for r in results))
    expected = reference.score(reference.load_jsonl(str(questions_file)), reference.load_jsonl(str(results_file)))
    assert score(QUESTIONS, results) == expected


def test_hand_computed_values():
    scores = score(QUESTIONS, RESULT_SETS["mixed"])
    assert scores["facts_all"] == round(1 / 3, 3)  # only question a has every fact
    assert scores["facts_soft"] == round((1 + 0.5 + 0) / 3, 3)
    assert scores["file_hit"] == round(2 / 3, 3)  # ./ and docs/ prefixes are ignored
    assert scores["section_mrr"] == round((1 / 2 + 1) / 3, 3)
    assert scores["false_abstain"] == round(1 / 3, 3)
    assert scores["abstain_ok"] == 0.5
    assert scores["intent_acc"] == 0.6  # b (ambiguous) and e miss
    assert scores["p50_ms"] == 30.0 and scores["p95_ms"] == 50.0


def test_slices_score_their_own_questions():
    slices = score_slices(QUESTIONS, RESULT_SETS["mixed"])
    assert set(slices) == {"all", "screen", "conceptual", "long_section"}
    assert slices["screen"]["questions"] == 2 and slices["screen"]["facts_all"] == 1.0
    assert slices["conceptual"]["facts_all"] == 0.0
    assert slices["long_section"]["questions"] == 1
    assert slices["screen"]["p95_ms"] == 30.0  # latency of the slice's own lines


def test_normalise_and_section_match():
    assert normalise("See **[the list](a.md)**\u00a0 below") == "see the list below"
    assert same_section(["Pricing"], ["pricing", "Price field"])
    assert not same_section([], ["Pricing"])
    assert not same_section(["Pricing", "Other"], ["Pricing", "Price field"])
