"""Milliseconds per node and chunk ids per stage: the bookkeeping of one turn.

Every node is decorated with `timed("name")`, which times it once and adds its entry to the
update it returns. Both dicts are rebuilt from the state at each node and replace the last
(no reducer): a node's update holds the whole turn so far, and the node that opens a turn
(`opens_turn`, condense) starts them afresh, so a checkpointed conversation never carries one
turn's figures into the next.
"""
from __future__ import annotations

import functools
import inspect
import time
from typing import Any, Callable


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


def timed(node: str, *, stage: str | None = None, untimed: Callable[[Any], Any] | None = None,
          opens_turn: bool = False):
    """Decorate a node (sync or async) so its update carries the turn's `timings_ms` with this
    node's milliseconds added and, with `stage` (the key of the candidates it returns), the
    turn's `stages` with their chunk ids under the node's name.

    `untimed(config)` runs first, off the clock: what a node loads once per process (the
    embedding model, the store's connection) is not the time a question spends in it.
    `opens_turn`: this node starts the turn, with its own timing alone and no stages yet."""

    def finish(state: dict, update: dict, ms: float) -> dict:
        update["timings_ms"] = with_timing({} if opens_turn else state, node, ms)
        if opens_turn:
            update["stages"] = {}
        elif stage is not None:
            update["stages"] = with_stage(state, node, update[stage])
        return update

    def decorate(step):
        parameters = inspect.signature(step)

        def prepare(state, args, kwargs) -> None:
            if untimed is not None:
                untimed(parameters.bind_partial(state, *args, **kwargs).arguments.get("config"))

        if inspect.iscoroutinefunction(step):
            @functools.wraps(step)
            async def run_async(state: dict, *args, **kwargs) -> dict:
                prepare(state, args, kwargs)
                with Stopwatch() as sw:
                    update = await step(state, *args, **kwargs)
                return finish(state, update, sw.ms)
            return run_async

        @functools.wraps(step)
        def run(state: dict, *args, **kwargs) -> dict:
            prepare(state, args, kwargs)
            with Stopwatch() as sw:
                update = step(state, *args, **kwargs)
            return finish(state, update, sw.ms)
        return run

    return decorate
