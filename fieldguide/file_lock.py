"""Exclusive file locks that the system releases however their holder ends (even SIGKILL).

A lock file holds a line naming its holder (pid, host, since when) for whoever finds it
taken. The holder removes the file when it lets go; a waiter that locked a file removed
meanwhile notices (it is no longer the one at the path) and tries again, so two processes
never both believe they hold it.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from pathlib import Path
from typing import IO


def try_lock(path: Path) -> IO | None:
    """The locked, open file at `path` (its holder line written), or None while another holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return None
        try:
            if os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino:
                break
        except FileNotFoundError:
            pass
        handle.close()  # the holder removed it as we locked it: take the new one
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {socket.gethostname()}, since {time.strftime('%H:%M:%S')}")
    handle.flush()
    return handle


def holder(path: Path) -> str:
    """Who holds the lock at `path`, as its holder line says."""
    try:
        return path.read_text().strip() or "another process"
    except OSError:
        return "another process"


def release(handle: IO, path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()  # while still locked: a waiter then finds its file gone and opens the new one
    fcntl.flock(handle, fcntl.LOCK_UN)
    handle.close()
