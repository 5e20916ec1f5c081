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
    """Decide when a full release pays: when the service goes idle, at most every `min_interval` s.

    A full `gc.collect()` costs milliseconds once models are loaded, so it is never run per
    token or while other answers are streaming, only at a turn boundary with no other turn
    running, or after `every_turns` turns when the service is never idle.
    """

    def __init__(self, min_interval: float = 2.0, every_turns: int = 200) -> None:
        self.min_interval = min_interval
        self.every_turns = every_turns
        self._last = time.monotonic()
        self._turns = 0
        self.releases = 0

    def turn_finished(self, running_turns: int) -> bool:
        self._turns += 1
        now = time.monotonic()
        due = (running_turns == 0 and now - self._last >= self.min_interval) or self._turns >= self.every_turns
        if due:
            self._last, self._turns = now, 0
            self.releases += 1
        return due
