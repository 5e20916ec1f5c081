"""What the docs team's console shows, computed from the stored turns, feedback and handoffs.

Every series is a list of rows, one per UTC day of the window (days without turns included, as
zeros, so a chart's gaps are real), and every row a flat dict, so the JSON API and the CSV
export (`to_csv`) carry the same numbers:

* questions per day: turns asked (whatever became of them), the conversations they belong to,
  and the turns that ended in an error;
* coverage per day: the verdict of each answered turn, `covered` (answered), `partial` (closest
  match), `not_covered`; a turn stored before turns carried a verdict is `not_covered` when it
  abstained and `covered` otherwise;
* feedback per day: thumbs up and down, the newest vote of each rated turn (a reader who changes
  their mind counts once), on the day of that vote;
* handoffs per day: requests sent to support and how their delivery stands (counts only: what a
  reader wrote and how to reach them stays in the outbox);
* gaps (`gap_rows`): the gap report's top clusters with their `file#heading` tasks;
* stale answers (`stale_rows`): stored answers whose cited sections changed or disappeared.
"""
from __future__ import annotations

import csv
import io
import math
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Sequence

VERDICTS = ("covered", "partial", "not_covered")
MAX_DAYS = 366
ERROR_STATUSES = ("error", "interrupted")


def _get(record: Any, name: str, default=None):
    return record.get(name, default) if isinstance(record, dict) else getattr(record, name, default)


def coverage_of(record: Any) -> str | None:
    """The coverage verdict of a finished turn (None while it runs or when it failed): the stored
    `coverage` when the turn has one, else `not_covered` for an abstention and `covered` otherwise."""
    if _get(record, "status", "done") != "done":
        return None
    stored = _get(record, "coverage")
    if stored in VERDICTS:
        return stored
    return "not_covered" if _get(record, "abstain") else "covered"


def day_of(moment: float) -> str:
    return datetime.fromtimestamp(moment, tz=timezone.utc).strftime("%Y-%m-%d")


class _Days:
    """Which day of the window a moment falls on: whole UTC days of 86400 s from the first."""

    def __init__(self, days: Sequence[str]) -> None:
        self.days = list(days)
        self.start = datetime.strptime(self.days[0], "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()

    def __call__(self, moment: Any) -> str | None:
        index = math.floor((float(moment or 0.0) - self.start) / 86400.0)
        return self.days[index] if 0 <= index < len(self.days) else None


def window(days: int, now: float) -> tuple[float, list[str]]:
    """(epoch seconds of the first day's start, the days as YYYY-MM-DD) of the `days` UTC days
    ending with the day of `now`."""
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"days must be between 1 and {MAX_DAYS}")
    today = datetime.fromtimestamp(now, tz=timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    first = today - timedelta(days=days - 1)
    return first.timestamp(), [(first + timedelta(days=i)).strftime("%Y-%m-%d") for i in range(days)]


def questions_per_day(turns: Iterable[Any], days: Sequence[str]) -> list[dict]:
    asked, errors = Counter(), Counter()
    conversations: dict[str, set] = {day: set() for day in days}
    day_of_window = _Days(days)
    for record in turns:
        day = day_of_window(_get(record, "started_at"))
        if day is None:
            continue
        asked[day] += 1
        conversations[day].add(_get(record, "conversation_id"))
        if _get(record, "status") in ERROR_STATUSES:
            errors[day] += 1
    return [{"day": d, "questions": asked[d], "conversations": len(conversations[d]), "errors": errors[d]}
            for d in days]


def coverage_per_day(turns: Iterable[Any], days: Sequence[str]) -> list[dict]:
    counts: dict[str, Counter] = {day: Counter() for day in days}
    day_of_window = _Days(days)
    for record in turns:
        verdict = coverage_of(record)
        day = day_of_window(_get(record, "started_at"))
        if verdict is not None and day is not None:
            counts[day][verdict] += 1
    return [{"day": d, **{v: counts[d][v] for v in VERDICTS}} for d in days]


def newest_votes(feedback: Iterable[Any]) -> dict[tuple[str, int], Any]:
    """The newest feedback record of each rated turn."""
    newest: dict[tuple[str, int], Any] = {}
    for item in feedback:
        key = (_get(item, "conversation_id"), int(_get(item, "turn")))
        if key not in newest or float(_get(item, "at", 0.0)) >= float(_get(newest[key], "at", 0.0)):
            newest[key] = item
    return newest


def feedback_per_day(feedback: Iterable[Any], days: Sequence[str]) -> list[dict]:
    counts: dict[str, Counter] = {day: Counter() for day in days}
    day_of_window = _Days(days)
    for vote in newest_votes(feedback).values():
        day = day_of_window(_get(vote, "at"))
        if day is not None:
            counts[day][_get(vote, "rating")] += 1
    return [{"day": d, "up": counts[d]["up"], "down": counts[d]["down"]} for d in days]


def handoffs_per_day(deliveries: Iterable[Any], days: Sequence[str]) -> list[dict]:
    """Per day a request was made: requests (handoff ids), and how many of their deliveries
    (one per target) are delivered, still pending, or failed for good."""
    requests: dict[str, set] = {day: set() for day in days}
    status: dict[str, Counter] = {day: Counter() for day in days}
    day_of_window = _Days(days)
    for d in deliveries:
        day = day_of_window(_get(d, "created_at"))
        if day is None:
            continue
        requests[day].add(_get(d, "id"))
        status[day][_get(d, "status")] += 1
    return [{"day": d, "requests": len(requests[d]), "delivered": status[d]["delivered"],
             "pending": status[d]["pending"], "failed": status[d]["failed"]} for d in days]


def totals(rows: Sequence[dict], columns: Sequence[str]) -> dict[str, int]:
    return {c: sum(int(r[c]) for r in rows) for c in columns}


def gap_rows(report, top: int) -> list[dict]:
    """The report's `top` largest clusters, each with its tasks: the `file#heading` sections to
    write or fix (the sections its readers needed, or those nearest to what they asked)."""
    from fieldguide.gaps import KIND_TITLES, section_name

    rows = []
    for c in report.clusters[:top]:
        tasks = [section_name(n["source"], n.get("heading_path") or []) for n in c.nearest if n.get("source")]
        rows.append({"kind": c.kind, "title": KIND_TITLES.get(c.kind, c.kind), "count": c.count,
                     "question": c.wordings[0] if c.wordings else "", "questions": list(c.wordings[:5]),
                     "tasks": tasks, "action": c.action, "reason": c.reason})
    return rows


def stale_rows(stale: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(answers, by_source): each stale answer with its changed sections named `file#heading`;
    and per file, how many stale answers cite a section of it that changed or disappeared."""
    from fieldguide.gaps import section_name

    answers, per_source = [], Counter()
    for s in stale:
        sections = [{"source": c["source"], "heading_path": list(c["heading_path"]), "change": c["change"],
                     "section": section_name(c["source"], c["heading_path"])} for c in s["sections"]]
        answers.append({"turn": s["turn"], "question": s["question"], "index_version": s["index_version"],
                        "sections": sections})
        for source in {c["source"] for c in sections}:
            per_source[source] += 1
    by_source = [{"source": source, "answers": n}
                 for source, n in sorted(per_source.items(), key=lambda item: (-item[1], item[0]))]
    return answers, by_source


def to_csv(columns: Sequence[str], rows: Iterable[dict]) -> str:
    """Rows as CSV with a header; list values joined by " | ". A cell that a spreadsheet would
    take for a formula (it starts with = + - @) is prefixed with ' (readers' questions are input)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in columns])
    return out.getvalue()


def _cell(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        value = " | ".join(str(v) for v in value)
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
