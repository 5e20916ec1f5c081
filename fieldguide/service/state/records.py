"""Stored turns and feedback: what a conversation asked and answered, kept for the docs team.

A turn record is written when a turn starts (its question) and completed when it ends, from
the turn's final state: standalone question, answer, citations, sentences, intent, abstain,
coverage and its reason,
timings, the index version and the standalone question's vector when the state carries them
(fields the state lacks are left empty). The vector is the one retrieval searched with,
`{"model": vector space id, "vector": [...]}` (`fieldguide.embedding.question_vector_space`):
`fieldguide gaps` clusters stored questions by it instead of embedding every wording again.
Feedback is stored with a copy of the turn it rates, so it stays meaningful after the
conversation itself has expired.

Every backend implements `TurnStore`; records outlive the event logs (they are kept
`turn_retention_days`, the logs only while a conversation is active).
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Protocol

# What a turn record copies from the final state, when present.
STATE_FIELDS = ("standalone_question", "answer", "intent", "abstain", "coverage", "coverage_reason", "citations",
                "sentences", "timings_ms", "index_version", "sections", "question_vector", "labels")
RATINGS = ("up", "down")


@dataclass
class TurnRecord:
    conversation_id: str
    turn: int  # 1-based, in the order asked
    question: str
    status: str = "running"  # running | done | error | interrupted
    standalone_question: str | None = None
    answer: str | None = None
    intent: str | None = None
    abstain: bool | None = None
    coverage: str | None = None  # covered | partial | not_covered (the answer line's verdict), when the state has it
    coverage_reason: str | None = None
    citations: list[dict] = field(default_factory=list)
    sentences: list[dict] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    index_version: str | None = None
    # what the answer rests on, for freshness: chunk_id, source, heading_path, digest of the text
    sections: list[dict] = field(default_factory=list)
    # the standalone question's vector as retrieval made it: {"model": vector space id, "vector": [...]}
    question_vector: dict[str, Any] | None = None
    labels: list[str] = field(default_factory=list)  # the doc sets the question was limited to (none: every set)
    error: str | None = None
    started_at: float = field(default_factory=time.time)  # seconds since the epoch
    finished_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TurnRecord":
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)

    def finish(self, status: str, final: dict[str, Any] | None = None, error: str | None = None) -> "TurnRecord":
        """This record completed from a turn's final state (a copy)."""
        values = self.to_dict()
        for name in STATE_FIELDS:
            if final and final.get(name) is not None:
                values[name] = final[name]
        values.update(status=status, error=error, finished_at=time.time())
        return TurnRecord.from_dict(values)


@dataclass
class FeedbackRecord:
    conversation_id: str
    turn: int
    rating: str  # "up" | "down"
    comment: str
    at: float
    record: TurnRecord  # the rated turn as it was when rated

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "record": self.record.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FeedbackRecord":
        return cls(conversation_id=data["conversation_id"], turn=int(data["turn"]), rating=data["rating"],
                   comment=data.get("comment") or "", at=float(data["at"]),
                   record=TurnRecord.from_dict(data["record"]))


class TurnStore(Protocol):
    def start(self, conversation_id: str, question: str, started_at: float | None = None) -> TurnRecord:
        """Record a new turn (numbered after the conversation's last) and return it; `started_at`
        (epoch seconds) is now unless given (turns replayed or imported keep their own time)."""

    def finish(self, record: TurnRecord) -> None:
        """Store the completed record (`TurnRecord.finish`)."""

    def turns(self, conversation_id: str) -> list[TurnRecord]:
        """The conversation's turns in order."""

    def turn(self, conversation_id: str, turn: int) -> TurnRecord | None: ...

    def turns_since(self, since: float = 0.0) -> Iterator[TurnRecord]:
        """Every kept turn that started at or after `since` (epoch seconds), oldest first."""

    def add_feedback(self, conversation_id: str, turn: int, rating: str, comment: str = "",
                     at: float | None = None) -> FeedbackRecord | None:
        """Store feedback on a turn (given `at`, epoch seconds, or now); None when that turn is unknown."""

    def feedback_since(self, since: float = 0.0) -> Iterator[FeedbackRecord]: ...


def rate(turns: TurnStore, conversation_id: str, turn: int, rating: str, comment: str = "",
         at: float | None = None) -> FeedbackRecord | None:
    """The feedback record for a turn of `turns` (None when there is no such turn); ValueError for a bad rating."""
    if rating not in RATINGS:
        raise ValueError(f"rating must be one of {', '.join(RATINGS)}")
    record = turns.turn(conversation_id, turn)
    if record is None:
        return None
    return FeedbackRecord(conversation_id, turn, rating, comment, time.time() if at is None else float(at), record)


def new_record(conversation_id: str, turn: int, question: str, started_at: float | None = None) -> TurnRecord:
    if started_at is None:
        return TurnRecord(conversation_id, turn, question)
    return TurnRecord(conversation_id, turn, question, started_at=float(started_at))


class MemoryTurnStore:
    """Turns and feedback in this process only (the `memory://` state): the newest
    `max_turns` turns and `max_feedback` feedback records are kept."""

    def __init__(self, max_turns: int = 10_000, max_feedback: int = 10_000) -> None:
        self.max_turns = max_turns
        self.max_feedback = max_feedback
        self._turns: OrderedDict[tuple[str, int], TurnRecord] = OrderedDict()
        self._counts: dict[str, int] = {}
        self._feedback: list[FeedbackRecord] = []
        self._lock = threading.Lock()

    def start(self, conversation_id: str, question: str, started_at: float | None = None) -> TurnRecord:
        with self._lock:
            number = self._counts.get(conversation_id, 0) + 1
            self._counts[conversation_id] = number
            record = new_record(conversation_id, number, question, started_at)
            self._turns[(conversation_id, number)] = record
            while len(self._turns) > self.max_turns:
                (old_id, _), _ = self._turns.popitem(last=False)
                if not any(key[0] == old_id for key in self._turns):
                    self._counts.pop(old_id, None)
            return record

    def finish(self, record: TurnRecord) -> None:
        with self._lock:
            key = (record.conversation_id, record.turn)
            if key in self._turns:
                self._turns[key] = record

    def turns(self, conversation_id: str) -> list[TurnRecord]:
        with self._lock:
            return sorted((r for (cid, _), r in self._turns.items() if cid == conversation_id), key=lambda r: r.turn)

    def turn(self, conversation_id: str, turn: int) -> TurnRecord | None:
        with self._lock:
            return self._turns.get((conversation_id, turn))

    def turns_since(self, since: float = 0.0) -> Iterator[TurnRecord]:
        with self._lock:
            records = [r for r in self._turns.values() if r.started_at >= since]
        return iter(sorted(records, key=lambda r: r.started_at))

    def add_feedback(self, conversation_id: str, turn: int, rating: str, comment: str = "",
                     at: float | None = None) -> FeedbackRecord | None:
        feedback = rate(self, conversation_id, turn, rating, comment, at)
        if feedback is None:
            return None
        with self._lock:
            self._feedback.append(feedback)
            del self._feedback[:-self.max_feedback]
        return feedback

    def feedback_since(self, since: float = 0.0) -> Iterator[FeedbackRecord]:
        with self._lock:
            return iter([f for f in self._feedback if f.at >= since])
