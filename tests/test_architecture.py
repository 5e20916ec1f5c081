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

from tests.conftest import missing

ROOT = Path(__file__).resolve().parents[1]


def lint_imports() -> str:
    beside = Path(sys.executable).with_name("lint-imports")
    command = str(beside) if beside.exists() else shutil.which("lint-imports")
    if command is None:
        missing("import-linter is not installed; the `test` extra installs it")
    return command


def test_the_import_contracts_hold():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    # no cache: it would be written into the checkout, and the graph takes well under a second
    result = subprocess.run([lint_imports(), "--no-cache", "--no-logo"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "0 broken" in report, report


MODULE_LINES = 500
FUNCTION_LINES = 80
PRODUCTION = ("fieldguide", "graph", "nodes", "ingest", "prompts")


def production_modules():
    for package in PRODUCTION:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "node_modules" not in path.parts:
                yield path


def test_no_module_over_500_lines_and_no_function_over_80():
    """Rooms that do one job: a module that outgrows this is split by job, a function into named
    steps (benchmarks and tests are left out)."""
    import ast

    too_long = []
    for path in production_modules():
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT).as_posix()
        if text.count("\n") > MODULE_LINES:
            too_long.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > FUNCTION_LINES:
                    too_long.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    assert not too_long, "\n".join(too_long)
