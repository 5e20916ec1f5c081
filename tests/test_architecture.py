"""The import contracts of `.importlinter` hold: production code never imports the test
stand-ins, ingestion and the query steps know nothing of the layers above them, and the
entry points, service, graph, steps and runtime stay layered.

`lint-imports` runs as a child process on this checkout (its folder first on the path), so
it analyses these files, not wherever the package happens to be installed.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def lint_imports() -> str:
    beside = Path(sys.executable).with_name("lint-imports")
    command = str(beside) if beside.exists() else shutil.which("lint-imports")
    if command is None:
        message = "import-linter is not installed; the `test` extra installs it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return command


def test_the_import_contracts_hold():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    # no cache: it would be written into the checkout, and the graph takes well under a second
    result = subprocess.run([lint_imports(), "--no-cache", "--no-logo"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "0 broken" in report, report
