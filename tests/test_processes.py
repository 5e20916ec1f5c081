"""Ending child processes: the signal first, SIGKILL only after the grace period."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

from fieldguide.processes import end_process

IGNORES = "import signal, time; signal.signal(signal.{}, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"


def child(code: str, **kwargs) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, **kwargs)
    assert process.stdout.readline().strip() == "ready"  # its handlers are in place
    return process


def test_a_child_that_obeys_ends_with_the_signal_sent():
    process = child("import time; print('ready', flush=True); time.sleep(60)")
    end_process(process, 10)
    assert process.returncode == -signal.SIGTERM


def test_a_child_that_ignores_the_signal_is_killed_after_the_grace_period():
    process = child(IGNORES.format("SIGTERM"))
    started = time.monotonic()
    end_process(process, 0.5)
    assert process.returncode == -signal.SIGKILL and time.monotonic() - started >= 0.5


def test_a_group_gets_the_signal_and_the_kill():
    process = child(IGNORES.format("SIGINT"), start_new_session=True)
    end_process(process, 0.5, signal.SIGINT, group=True)
    assert process.returncode == -signal.SIGKILL
    obeys = child("import time; print('ready', flush=True); time.sleep(60)", start_new_session=True)
    end_process(obeys, 10, signal.SIGINT, group=True)
    assert obeys.returncode != -signal.SIGKILL  # SIGINT reached it: it ended before any kill


def test_nothing_to_end_is_no_error():
    end_process(None, 1)
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    end_process(done, 1)
    assert done.returncode == 0
