"""Reading stored turns: the problem turns among turn and feedback records, and their question vectors."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Sequence

TURN_KINDS = ("disliked", "partial", "unanswered")


def parse_since(text: str | None) -> float:
    """`--since`: an ISO date or date-time (UTC unless it says otherwise) as epoch seconds."""
    if not text:
        return 0.0
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--since {text!r}: expected a date like 2026-01-31 or 2026-01-31T09:00") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _get(record: Any, name: str, default=None):
    if isinstance(record, dict):
        return record.get(name, default)
    return getattr(record, name, default)


@dataclass
class ProblemTurn:
    conversation_id: str
    turn: int
    question: str  # the standalone question when there is one, else as asked
    asked: str
    reasons: list[str]  # abstained | partial | weak | disliked
    answered: bool
    citations: list[dict] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    at: float = 0.0
    # the question's vector as stored with the turn: {"model": id, "vector": [...]}, or None
    stored_vector: dict | None = None


@dataclass
class TurnSummary:
    turns: int = 0  # finished turns read
    checked: int = 0  # answered turns whose sentences were checked
    unchecked: int = 0  # answered turns stored without sentence checks
    problems: list[ProblemTurn] = field(default_factory=list)


def sentence_reasons(sentences: Sequence[dict] | None) -> list[str]:
    """"weak" when a sentence reached the reader only with a warning (verify=flag). A sentence the
    check left out is no problem of the docs: the reader never saw it, and the small local model
    has one left out in nearly every answer, so counting it put answers the quotes had answered
    well ("Which field holds the number of life jackets?", with the right table row) in the
    report as topics to write."""
    reasons = []
    if any(isinstance(s, dict) and s.get("kept") is not False and s.get("flagged") for s in sentences or ()):
        reasons.append("weak")
    return reasons


def problem_turns(turns: Iterable[Any], feedback: Iterable[Any] = (), since: float = 0.0) -> TurnSummary:
    """The problem turns among stored turn records (TurnRecord or dicts) and feedback records;
    the newest vote on a turn is the one that counts."""
    votes: dict[tuple[str, int], tuple[float, str, str]] = {}
    rated: dict[tuple[str, int], Any] = {}
    for item in feedback:
        key = (_get(item, "conversation_id"), int(_get(item, "turn")))
        at = float(_get(item, "at", 0.0) or 0.0)
        if key not in votes or at >= votes[key][0]:
            votes[key] = (at, _get(item, "rating"), _get(item, "comment") or "")
            rated[key] = _get(item, "record")
    summary = TurnSummary()
    seen = set()
    for record in turns:
        status = _get(record, "status", "done")
        if status not in ("done", None):
            continue
        started = float(_get(record, "started_at", 0.0) or 0.0)
        if started < since:
            continue
        key = (_get(record, "conversation_id"), int(_get(record, "turn")))
        seen.add(key)
        summary.turns += 1
        _add(summary, record, key, votes.get(key))
    for key, record in rated.items():  # a rated turn whose own record has expired: its copy
        if key not in seen and record is not None and float(_get(record, "started_at", 0.0) or 0.0) >= since:
            summary.turns += 1
            _add(summary, record, key, votes.get(key))
    return summary


def _add(summary: TurnSummary, record: Any, key: tuple[str, int], vote) -> None:
    abstained = bool(_get(record, "abstain"))
    sentences = _get(record, "sentences") or []
    reasons = ["abstained"] if abstained else []
    if not abstained and _get(record, "coverage") == "partial":
        reasons.append("partial")
    if not abstained:
        if sentences:
            summary.checked += 1
            reasons += sentence_reasons(sentences)
        else:
            summary.unchecked += 1
    comments = []
    if vote is not None and vote[1] == "down":
        reasons.append("disliked")
        if vote[2].strip():
            comments.append(vote[2].strip())
    if not reasons:
        return
    asked = str(_get(record, "question") or "").strip()
    question = str(_get(record, "standalone_question") or "").strip() or asked
    if not question:
        return
    summary.problems.append(ProblemTurn(key[0], key[1], question, asked, reasons, not abstained,
                                        list(_get(record, "citations") or []), comments,
                                        float(_get(record, "started_at", 0.0) or 0.0),
                                        _stored_vector(_get(record, "question_vector"))))


def _stored_vector(value) -> dict | None:
    """A turn's stored question vector when well formed ({"model": str, "vector": numbers}), else
    None: an old record without one, or a damaged one, is embedded again."""
    if not isinstance(value, dict) or not isinstance(value.get("model"), str):
        return None
    vector = value.get("vector")
    if not isinstance(vector, list) or not vector or not all(isinstance(x, (int, float)) for x in vector):
        return None
    return {"model": value["model"], "vector": [float(x) for x in vector]}


def wording_vectors(problems, wordings: list[str], embed, model: str | None) -> tuple[list, int]:
    """One vector per wording: the one stored with a turn of that wording when it was made by
    `model`, else embedded here (all such wordings in one call). Returns (vectors, embedded count)."""
    known: dict[str, list[float]] = {}
    if model is not None:
        for t in problems:
            if t.stored_vector and t.stored_vector["model"] == model and t.question not in known:
                known[t.question] = t.stored_vector["vector"]
    missing = list(dict.fromkeys(w for w in wordings if w not in known))
    if missing:
        known.update(zip(missing, embed(missing)))
    return [known[w] for w in wordings], len(missing)


def turn_kind(turn: ProblemTurn) -> str:
    """What a problem turn asks of the docs team: "disliked" (answered and voted down: a reader's own
    verdict on an answer), "partial" (answered, and the reader told the quotes are only the closest),
    or "unanswered" (abstained on, or weakly supported). Turns are clustered within their kind: a
    voted-down answer clustered with turns abstained on or answered partially about the same topic
    was outvoted by them and reported as a topic not found, its vote lost."""
    if turn.answered and "disliked" in turn.reasons:
        return "disliked"
    if turn.answered and "partial" in turn.reasons:
        return "partial"
    return "unanswered"
