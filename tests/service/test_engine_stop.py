"""Stopping the turn engine lets cancelled turns finish what they do on their way out.

LangGraph saves a conversation's checkpoint when a run ends (`durability="exit"`), also when the
run is cancelled: the save is a task of its own that the cancelled run awaits. A second
cancellation while it awaits abandons the save (LangGraph hands the task over in the
exception's args), and a loop stopped then never finishes it: the interrupted turn is then
missing from the conversation's history after a restart."""
from __future__ import annotations

import asyncio
import threading

from fieldguide.service.engine import TurnEngine

SAVE_SECONDS = 0.3


def run_with_exit_save(saved: threading.Event, running: threading.Event):
    async def turn():
        try:
            running.set()
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            async def save():
                await asyncio.sleep(SAVE_SECONDS)  # a store takes many loop turns to answer
                saved.set()

            await asyncio.create_task(save())
            raise
    return turn()


def test_stop_waits_for_a_turn_cancelled_beforehand_to_save():
    engine = TurnEngine(name="test-engine")
    saved, running = threading.Event(), threading.Event()
    future = engine.submit(run_with_exit_save(saved, running))
    assert running.wait(5)
    future.cancel()  # what the service's shutdown does to each running turn first

    asyncio.run(engine.stop(timeout=5))
    assert saved.is_set(), "the cancelled turn's save was cut short"


def test_stop_waits_for_what_a_turn_starts_while_it_is_being_cancelled():
    engine = TurnEngine(name="test-engine")
    saved, running = threading.Event(), threading.Event()
    engine.submit(run_with_exit_save(saved, running))
    assert running.wait(5)

    asyncio.run(engine.stop(timeout=5))  # cancels the turn itself
    assert saved.is_set()


def test_stop_still_ends_a_turn_that_never_finishes_within_the_timeout():
    engine = TurnEngine(name="test-engine")
    running = threading.Event()

    async def stubborn():
        running.set()
        while True:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                continue

    engine.submit(stubborn())
    assert running.wait(5)
    thread = engine._thread
    asyncio.run(engine.stop(timeout=0.5))
    thread.join(5)
    assert not thread.is_alive()  # the loop was stopped all the same


def test_a_turn_cancelled_twice_still_awaits_the_save_langgraph_hands_over():
    from fieldguide.service.turns import finish_exit_save

    async def scenario() -> bool:
        saved = asyncio.Event()

        async def save():
            await asyncio.sleep(SAVE_SECONDS)
            saved.set()

        handed_over = asyncio.CancelledError("cancelled while saving", asyncio.create_task(save()))
        await finish_exit_save(handed_over)
        return saved.is_set()

    assert asyncio.run(scenario())
