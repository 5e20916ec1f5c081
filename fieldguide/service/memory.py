"""Process memory hygiene for the long-running service.

glibc gives every thread that mallocs its own arena (up to 8 per core), and freed memory in
those arenas is rarely returned to the system: a server with a thread pool creeps upwards.
Capping the arenas and trimming after bursts of work keeps resident memory flat.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys
import threading
import time

M_ARENA_MAX = -8  # mallopt parameter number (glibc malloc.h)
DEFAULT_ARENAS = 2


def _libc():
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


def limit_malloc_arenas(arenas: int | None = None) -> int | None:
    """Cap glibc malloc arenas now (mallopt) and for child processes (MALLOC_ARENA_MAX).

    Call it before threads are started and heavy libraries are imported: arenas that
    already exist stay. Returns the cap in force, or None when the C library is not glibc.
    """
    arenas = arenas or int(os.environ.get("MALLOC_ARENA_MAX") or DEFAULT_ARENAS)
    os.environ["MALLOC_ARENA_MAX"] = str(arenas)
    libc = _libc()
    if libc is None:
        return None
    libc.mallopt(M_ARENA_MAX, arenas)
    return arenas


def release_memory() -> None:
    """Collect garbage, return free heap pages to the system, empty GPU caches."""
    gc.collect()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
    torch = sys.modules.get("torch")  # only if something already imported it
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def settle_heap() -> None:
    """Keep what is alive now (modules, classes, loaded models) out of every later collection.

    Call it once start-up work is done. Those objects live as long as the process, yet a
    full collection walks all of them, holding the interpreter lock the whole time (well
    over 100 ms once langchain and a model are loaded): every thread stalls, and so does
    every open stream. Frozen, they are skipped; collections then cost what the requests
    allocate.
    """
    gc.collect()
    gc.freeze()


class ReleasePolicy:
    """When a full release pays: once the service has been idle for a moment, or every
    `every_turns` turns when it never is.

    A full `gc.collect()` holds the interpreter for milliseconds, so it never runs per token
    or while answers stream. Nor at the instant the last running turn ends: clients waiting
    for their answers ask again right then, and their requests would wait behind it. The
    janitor asks `idle_due` on its rounds; turn ends report to `turn_finished`.
    """

    def __init__(self, idle_seconds: float = 0.5, every_turns: int = 200) -> None:
        self.idle_seconds = idle_seconds
        self.every_turns = every_turns
        self.releases = 0
        self._turns = 0
        self._last_turn_end: float | None = None
        self._released_since_last_turn = True
        self._lock = threading.Lock()  # turns end on the engine's thread, the janitor runs on the HTTP loop

    def turn_finished(self, now: float | None = None) -> bool:
        """A turn ended: True when a release is due because the service is never idle."""
        with self._lock:
            self._turns += 1
            self._last_turn_end = time.monotonic() if now is None else now
            self._released_since_last_turn = False
            if self._turns >= self.every_turns:
                return self._release_locked()
            return False

    def idle_due(self, running_turns: int, now: float | None = None) -> bool:
        """True once after the last turn ended, when none has run for `idle_seconds`."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if running_turns or self._released_since_last_turn or self._last_turn_end is None:
                return False
            if now - self._last_turn_end < self.idle_seconds:
                return False
            return self._release_locked()

    def _release_locked(self) -> bool:
        self._turns = 0
        self._released_since_last_turn = True
        self.releases += 1
        return True
