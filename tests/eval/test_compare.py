"""`fieldguide eval --compare`: a docs change against the report made before it.

The command path runs for real (the CLI in a subprocess, the session's Weaviate, the packaged
embedding model): a baseline report of the sample docs, then the same questions after an
unrelated edit (no change, exit 0) and after the gold section of one question was deleted
(flagged as a regression, exit 1). A bad baseline file is a clear error that runs nothing.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from fieldguide.evaluation.compare import compare_records, question_records, read_baseline, summary_line

SAMPLE_DOCS = Path(__file__).resolve().parents[2] / "fieldguide" / "sample_docs"

QUESTIONS = [
    {"id": "c-1", "question": "How much of the price is taken as a deposit when a booking is confirmed?",
     "answerable": True, "gold_file": "concepts/pricing.md",
     "gold_heading_path": ["Prices, deposits and cancellations", "Deposit"], "key_facts": ["30 % of the price"]},
    {"id": "c-2", "question": "Until when can a customer cancel a booking without paying?",
     "answerable": True, "gold_file": "concepts/pricing.md",
     "gold_heading_path": ["Prices, deposits and cancellations", "Cancelling"],
     "key_facts": ["48 hours before the start"]},
    {"id": "c-3", "question": "Which status does a newly added boat start in?", "answerable": True,
     "gold_file": "screens/fleet-list.md", "gold_heading_path": ["Fleet list", "Adding a boat"],
     "key_facts": ["starts in the Maintenance status"]},
]


def _record(**values):
    base = {"id": "q", "question": "?", "answerable": True, "abstain": False, "context": ["a.md#A"],
            "gold_in_context": True, "context_facts": ["fact"]}
    return {**base, **values}


def test_regressions_are_told_apart_from_changes():
    rows = compare_records(
        [_record(id="same"), _record(id="gold"), _record(id="order", context=["a.md#A", "b.md#B"]),
         _record(id="abst"), _record(id="unans", answerable=False, abstain=True, context=[], gold_in_context=None,
                                     context_facts=[])],
        [_record(id="same"), _record(id="gold", context=["b.md#B"], gold_in_context=False, context_facts=[]),
         _record(id="order", context=["b.md#B", "a.md#A"]), _record(id="abst", abstain=True),
         _record(id="unans", answerable=False, abstain=False, context=["c.md#C"], gold_in_context=None,
                 context_facts=[]), _record(id="new")])
    by_id = {r["id"]: r for r in rows}
    assert by_id["same"] == {"id": "same", "question": "?", "changes": [], "regressions": []}
    assert by_id["gold"]["regressions"] == ["gold section left the context", "context lost 1 key fact(s)"]
    assert by_id["order"]["changes"] == ["context order"] and not by_id["order"]["regressions"]
    assert by_id["abst"]["regressions"] == ["abstains on an answerable question"]
    assert by_id["unans"]["regressions"] == ["answers an unanswerable question"]
    assert by_id["new"]["changes"] == ["new question"]
    assert summary_line(rows, 2)[1] is True and summary_line(rows, 3)[1] is False


def test_answer_records_compare_facts_and_citations():
    questions = [dict(QUESTIONS[0])]
    block = {"source": "concepts/pricing.md", "heading_path": ["Prices, deposits and cancellations", "Deposit"],
             "text": "Confirming takes the deposit, by default 30 % of the price."}
    results = [{"id": "c-1", "abstain": False, "context": [block]}]
    good = question_records(questions, results, [{"id": "c-1", "abstain": False, "answer": "It is 30 % of the price [1].",
                                                  "citations": [block]}])
    bad = question_records(questions, results, [{"id": "c-1", "abstain": False, "answer": "A deposit is taken.",
                                                 "citations": []}])
    assert good[0]["answer_facts"] == ["30 % of the price"] and good[0]["gold_cited"] is True
    row = compare_records(good, bad)[0]
    assert row["regressions"] == ["answer lost 1 key fact(s)", "no longer cites the gold section"]
    assert "citations" in row["changes"] and "answer facts" in row["changes"]


def test_bad_baseline_files_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        read_baseline(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="is not JSON"):
        read_baseline(tmp_path / "broken.json")
    (tmp_path / "old.json").write_text(json.dumps({"scores": {}}), encoding="utf-8")
    with pytest.raises(ValueError, match="no per-question records"):
        read_baseline(tmp_path / "old.json")


def _eval(*args, env: dict, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fieldguide.cli", "eval", *args], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=timeout)


def test_cli_refuses_a_bad_baseline_before_running(tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    (tmp_path / "report.json").write_text("[]", encoding="utf-8")
    result = _eval("--docs", str(SAMPLE_DOCS), "--questions", str(questions), "--compare",
                   str(tmp_path / "report.json"), env={"FIELDGUIDE_WEAVIATE_URL": "http://127.0.0.1:1"})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "no per-question records" in result.stderr


@pytest.mark.weaviate
@pytest.mark.models
@pytest.mark.timeout(1800)
def test_deleted_gold_section_regresses_and_unrelated_edit_does_not(tmp_path, weaviate_service):
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLE_DOCS, docs)
    questions = tmp_path / "golden.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    collection = "Cmp" + uuid.uuid4().hex[:10]
    env = {"FIELDGUIDE_DATA_DIR": str(tmp_path / "data"), "FIELDGUIDE_COLLECTION": collection}
    common = ["--docs", str(docs), "--questions", str(questions), "--collection", collection]
    try:
        base = _eval(*common, "--out", str(tmp_path / "base"), "--no-baselines", env=env)
        assert base.returncode == 0, base.stderr
        baseline = tmp_path / "base" / "report.json"
        records = {r["id"]: r for r in json.loads(baseline.read_text())["question_records"]}
        assert all(records[q["id"]]["gold_in_context"] for q in QUESTIONS), records

        # An edit elsewhere (another file's section reworded): nothing changes.
        form = docs / "screens" / "booking-form.md"
        form.write_text(form.read_text(encoding="utf-8").replace(
            "## Buttons", "## Buttons\n\nThe buttons sit at the bottom of the form.\n", 1), encoding="utf-8")
        same = _eval(*common, "--out", str(tmp_path / "same"), "--compare", str(baseline), env=env)
        assert same.returncode == 0, same.stdout + same.stderr
        assert "3 questions: 0 changed, 0 regressed" in same.stdout

        # The gold section of c-1 deleted: a regression, and exit 1.
        pricing = docs / "concepts" / "pricing.md"
        text = pricing.read_text(encoding="utf-8")
        start, end = text.index("## Deposit"), text.index("## Cancelling")
        pricing.write_text(text[:start] + text[end:], encoding="utf-8")
        gone = _eval(*common, "--out", str(tmp_path / "gone"), "--compare", str(baseline), env=env)
        assert gone.returncode == 1, gone.stdout + gone.stderr
        assert "FAIL" in gone.stdout and "| c-1:" in gone.stdout
        rows = {r["id"]: r for r in json.loads((tmp_path / "gone" / "report.json").read_text())["comparison"]["rows"]}
        # The section's parent intro may still be retrieved (it counts as the gold section's
        # neighbourhood), but the fact it held is gone from the context.
        assert "context lost 1 key fact(s)" in rows["c-1"]["regressions"]
        assert not rows["c-2"]["regressions"] and not rows["c-3"]["regressions"]
    finally:
        from fieldguide.settings import Settings
        from fieldguide.store import ChunkStore, connect

        client = connect(Settings(collection=collection))
        try:
            ChunkStore(client, collection).drop()
        finally:
            client.close()
