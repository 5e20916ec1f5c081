"""Milliseconds per node and chunk ids per stage: the bookkeeping of one turn.

Both dicts are rebuilt by each node from the state (`with_timing`, `with_stage`): the
condense node opens a turn with fresh ones, so a checkpointed conversation never carries
one turn's figures into the next.
"""
from __future__ import annotations

import time

class Stopwatch:
    """Milliseconds spent in a block: `with Stopwatch() as sw: ...; sw.ms`."""

    def __enter__(self) -> "Stopwatch":
        self._start = time.perf_counter()
        self.ms = 0.0
        return self

    def __exit__(self, *exc) -> None:
        self.ms = round((time.perf_counter() - self._start) * 1000.0, 3)


def with_timing(state: dict, node: str, ms: float) -> dict[str, float]:
    """This turn's timings plus one node's (a fresh dict: the condense node starts the turn)."""
    timings = dict(state.get("timings_ms") or {})
    timings[node] = ms
    return timings


def with_stage(state: dict, stage: str, candidates: list[dict]) -> dict[str, list[str]]:
    stages = dict(state.get("stages") or {})
    stages[stage] = [c["chunk_id"] for c in candidates]
    return stages
