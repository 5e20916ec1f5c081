"""Where turns run: a dedicated thread with its own event loop.

The HTTP event loop only accepts requests and writes event streams. A turn's graph run
(LangGraph's bookkeeping, retrieval, prompt building, a local model's token loop) is CPU
work; on the HTTP loop, every `POST /conversations` would queue behind the running
answers. Here the turns share their own loop, and the two threads take turns on the
interpreter at the switch interval, so a request waits milliseconds, not for the backlog.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Coroutine


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop where it is installed: a turn is many small tasks and futures (LangGraph's steps,
    one callback per token), and uvloop schedules them for less CPU, which is CPU the HTTP
    thread gets back."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class TurnEngine:
    def __init__(self, name: str = "fieldguide-turns") -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._submitted: set[asyncio.Task] = set()  # touched on the loop's thread only

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._start_locked()
            return self._loop

    def _start_locked(self) -> None:
        started = threading.Event()
        loop = new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(started.set)
            try:
                loop.run_forever()
            finally:
                loop.close()

        # A daemon: an app that is never shut down (a test client without its lifespan)
        # must not keep the process alive.
        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        started.wait()
        self._loop = loop

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        """Run `coroutine` on the engine's loop; the future's cancel() cancels it there."""
        return asyncio.run_coroutine_threadsafe(self._tracked(coroutine), self.loop)

    async def _tracked(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        task = asyncio.current_task()
        self._submitted.add(task)
        try:
            return await coroutine
        finally:
            self._submitted.discard(task)

    async def stop(self, timeout: float = 10.0) -> None:
        """Cancel what still runs, let it finish its error events, then end the thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or loop.is_closed():
            return

        async def cancel_all() -> None:
            me = asyncio.current_task()
            # Cancel each submitted coroutine once. One cancelled already (the shutdown cancels
            # each running turn first) may be awaiting what it does on its way out, LangGraph's
            # save of the conversation's checkpoint, which a second cancellation would abandon.
            submitted = [t for t in self._submitted if not t.done()]
            for task in submitted:
                if not task.cancelling():
                    task.cancel()
            await asyncio.gather(*submitted, return_exceptions=True)
            rest = [t for t in asyncio.all_tasks() if t is not me]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        try:
            await asyncio.wait_for(asyncio.wrap_future(asyncio.run_coroutine_threadsafe(cancel_all(), loop)),
                                   timeout)
        except (asyncio.TimeoutError, RuntimeError):
            pass
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            await asyncio.to_thread(thread.join, timeout)
