#!/usr/bin/env bash
# Builds .venv-studio: fieldguide plus langgraph-cli[inmem], for LangGraph Studio and
# `langgraph dev`. It is a separate environment because the newest langgraph-api wants a
# grpcio that weaviate-client rejects; on its own, pip's resolver settles on a
# langgraph-api that accepts weaviate-client's grpcio, and .venv keeps its versions.
# Idempotent: nothing is installed when pyproject.toml is unchanged since the last build.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-studio
STAMP="$VENV/.fieldguide-pyproject.sha256"
export DISABLE_TELEMETRY=true
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "fieldguide needs Python 3.11 or newer"'

wanted=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ -x "$VENV/bin/langgraph" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$wanted" ]; then
  echo "studio environment up to date ($VENV)"
  exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
STUDIO_PY="$VENV/bin/python"
"$STUDIO_PY" -m pip install --quiet --upgrade pip wheel setuptools
# torch first and pinned, as in .venv, so nothing below pulls a second one (pip's cache keeps the wheel).
"$STUDIO_PY" -m pip install --quiet "torch==2.13.0"
"$STUDIO_PY" -m pip install --quiet -e ".[studio]"
"$STUDIO_PY" -m pip check >/dev/null || { "$STUDIO_PY" -m pip check >&2; exit 1; }
echo "$wanted" > "$STAMP"
echo "studio environment ready: $("$VENV/bin/langgraph" --version)"
