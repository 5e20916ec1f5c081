"""Ending a child process: a signal, a grace period, then SIGKILL.

The model server, the evaluation's service and the local Redis and Postgres of the tests and
benchmarks all end their children the same way; this is that one way.
"""
from __future__ import annotations

import os
import signal
import subprocess


def end_process(process: subprocess.Popen | None, timeout: float, sig: int = signal.SIGTERM,
                group: bool = False) -> None:
    """Sends `sig` to `process` if it still runs (to its whole process group with `group`), waits
    up to `timeout` seconds for it to exit, then kills it and reaps it."""
    if process is None or process.poll() is not None:
        return
    send = (lambda s: os.killpg(process.pid, s)) if group else process.send_signal
    send(sig)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        process.wait()
