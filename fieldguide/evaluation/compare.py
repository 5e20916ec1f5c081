"""`fieldguide eval --compare BASELINE_REPORT.json`: what a docs change did to the golden questions.

Every `fieldguide eval` report carries one record per question (`question_records`): the
sections its context came from, whether the gold section was among them, which key facts the
context held, whether it abstained and, when answers were generated (`--answers`), which key
facts the answer stated and which sections it cited. `--compare` makes the same records
against the current index and sets each question beside its baseline:

* **changed**: the context's sections, the facts, the citations or the abstention differ;
* **regressed**, for an answerable question: the gold section left the context, a key fact
  the context (or the answer) held is gone, a cited gold section is no longer cited, or it
  now abstains; for an unanswerable one: it no longer abstains.

The command exits 1 when more questions regressed than `--tolerance` allows (default 0:
the golden set is small and every question in it was put there on purpose).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from fieldguide.evaluation.metrics import docs_relative, normalise, same_section

RECORDS_VERSION = 1


def _section(block: dict) -> str:
    path = list(block.get("heading_path") or [])
    return f"{docs_relative(block.get('source'))}#{' > '.join(path)}" if path else docs_relative(block.get("source"))


def _is_gold(block: dict, question: dict) -> bool:
    return (bool(question.get("gold_file"))
            and docs_relative(block.get("source")) == docs_relative(question["gold_file"])
            and same_section(block.get("heading_path"), question.get("gold_heading_path")))


def _facts_in(text: str, facts: Sequence[str]) -> list[str]:
    haystack = normalise(text)
    return [fact for fact in facts if normalise(fact) and normalise(fact) in haystack]


def question_records(questions: list[dict], results: list[dict], answers: list[dict] | None = None) -> list[dict]:
    """One comparable record per question (see the module doc)."""
    by_id = {r.get("id"): r for r in results}
    answer_by_id = {a.get("id"): a for a in answers or []}
    records = []
    for q in questions:
        result = by_id.get(q["id"]) or {}
        context = result.get("context") or []
        facts = list(q.get("key_facts") or [])
        record = {
            "id": q["id"], "question": q["question"], "answerable": q.get("answerable", True) is not False,
            "abstain": bool(result.get("abstain")) or not context,
            "context": list(dict.fromkeys(_section(b) for b in context)),
            "gold_in_context": any(_is_gold(b, q) for b in context) if q.get("gold_file") else None,
            "context_facts": _facts_in(" ".join(b.get("text", "") for b in context), facts),
        }
        answer = answer_by_id.get(q["id"])
        if answer is not None:
            cited = answer.get("citations") or []
            record.update({
                "answer_abstain": bool(answer.get("abstain")),
                "answer_facts": _facts_in(answer.get("answer") or "", facts),
                "citations": list(dict.fromkeys(_section(c) for c in cited)),
                "gold_cited": any(_is_gold(c, q) for c in cited) if q.get("gold_file") else None,
            })
        records.append(record)
    return records


def compare_records(baseline: list[dict], current: list[dict]) -> list[dict]:
    """A row per question of `current`: what changed and what regressed against `baseline`."""
    before = {r["id"]: r for r in baseline}
    rows = []
    for now in current:
        old = before.get(now["id"])
        if old is None:
            rows.append({"id": now["id"], "question": now["question"], "changes": ["new question"],
                         "regressions": []})
            continue
        changes, regressions = [], []
        if old["context"] != now["context"]:
            gone = [s for s in old["context"] if s not in now["context"]]
            came = [s for s in now["context"] if s not in old["context"]]
            changes.append("context" + (f" -{len(gone)}" if gone else "") + (f" +{len(came)}" if came else "")
                           + ("" if gone or came else " order"))
        if old.get("gold_in_context") and not now.get("gold_in_context"):
            regressions.append("gold section left the context")
        lost = [f for f in old["context_facts"] if f not in now["context_facts"]]
        if lost:
            regressions.append(f"context lost {len(lost)} key fact(s)")
        if set(old["context_facts"]) != set(now["context_facts"]):
            changes.append("context facts")
        if old["abstain"] != now["abstain"]:
            changes.append("abstains" if now["abstain"] else "no longer abstains")
            if now["answerable"] and now["abstain"]:
                regressions.append("abstains on an answerable question")
            if not now["answerable"] and not now["abstain"]:
                regressions.append("answers an unanswerable question")
        if "answer_facts" in old and "answer_facts" in now:
            lost = [f for f in old["answer_facts"] if f not in now["answer_facts"]]
            if lost:
                regressions.append(f"answer lost {len(lost)} key fact(s)")
            if set(old["answer_facts"]) != set(now["answer_facts"]):
                changes.append("answer facts")
            if old["citations"] != now["citations"]:
                changes.append("citations")
            if old.get("gold_cited") and not now.get("gold_cited"):
                regressions.append("no longer cites the gold section")
            if old["answer_abstain"] != now["answer_abstain"]:
                changes.append("answer abstains" if now["answer_abstain"] else "answer no longer abstains")
                if (now["answerable"] and now["answer_abstain"]
                        and "abstains on an answerable question" not in regressions):
                    regressions.append("answer abstains on an answerable question")
        rows.append({"id": now["id"], "question": now["question"], "changes": changes, "regressions": regressions})
    return rows


def read_baseline(path: Path) -> list[dict]:
    """The per-question records of a `fieldguide eval` report; ValueError naming what is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON ({exc.msg} at line {exc.lineno})") from None
    records = data.get("question_records") if isinstance(data, dict) else None
    if not isinstance(records, list) or not all(isinstance(r, dict) and "id" in r and "context" in r
                                                 and "context_facts" in r and "abstain" in r for r in records):
        raise ValueError(f"{path} has no per-question records: make the baseline with `fieldguide eval` "
                         "(a report.json of this version)")
    return records


def render_table(rows: list[dict], only_changed: bool = True) -> str:
    shown = [r for r in rows if r["changes"] or r["regressions"]] if only_changed else rows
    if not shown:
        return "No question changed.\n"
    lines = ["| question | changed | regressed |", "| --- | --- | --- |"]
    for r in shown:
        question = r["question"] if len(r["question"]) <= 70 else r["question"][:69] + "…"
        lines.append(f"| {r['id']}: {question.replace('|', '/')} | {', '.join(r['changes']) or '—'} | "
                     f"{'**' + '; '.join(r['regressions']) + '**' if r['regressions'] else '—'} |")
    return "\n".join(lines) + "\n"


def summary_line(rows: list[dict], tolerance: int) -> tuple[str, bool]:
    changed = sum(1 for r in rows if r["changes"] or r["regressions"])
    regressed = sum(1 for r in rows if r["regressions"])
    failed = regressed > tolerance
    return (f"{len(rows)} questions: {changed} changed, {regressed} regressed (tolerance {tolerance}): "
            + ("FAIL" if failed else "ok"), failed)


def comparison(rows: list[dict], tolerance: int) -> dict[str, Any]:
    line, failed = summary_line(rows, tolerance)
    return {"questions": len(rows), "changed": sum(1 for r in rows if r["changes"] or r["regressions"]),
            "regressed": sum(1 for r in rows if r["regressions"]), "tolerance": tolerance, "failed": failed,
            "rows": rows}
