#!/usr/bin/env bash
# Installs everything fieldguide needs on a fresh Debian machine, idempotently:
#   - a Python 3.11 virtual environment in .venv with the project (and, with --test, its test extras),
#     installed by uv (from PyPI): parallel downloads and one package cache that both .venv and
#     .venv-studio hard-link from, so torch (2.5 GB with its CUDA libraries) is fetched once, and
#     llama-cpp-python compiled once (scripts/uv-env.sh), while torch downloads
#   - the front-end libraries of the chat page (npm, from the registry), meanwhile
#   - a weaviate-server binary (built with `go install` when Go is present)
#   - Debian's chromium, for the browser tests (with --test)
# Safe to run again: each step is skipped when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

WITH_TEST=0
for arg in "$@"; do
  case "$arg" in
    --test) WITH_TEST=1 ;;
    *) echo "usage: scripts/setup.sh [--test]" >&2; exit 2 ;;
  esac
done

export DISABLE_TELEMETRY=true
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "fieldguide needs Python 3.11 or newer"'

# Front-end libraries of the chat page come from the npm registry, never from the repository;
# fetched while Python's packages install.
npm_job=""
if [ -f fieldguide/web/package.json ] && command -v npm >/dev/null; then
  (cd fieldguide/web && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) &
  npm_job=$!
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
VENV_PY=.venv/bin/python
[ -x .venv/bin/uv ] || "$VENV_PY" -m pip install --quiet --disable-pip-version-check "uv>=0.5"
source scripts/uv-env.sh
# torch (with its CUDA libraries, the largest download by far) comes down while llama-cpp-python
# compiles; then everything else, with that wheel.
.venv/bin/uv pip install --quiet --python "$VENV_PY" "$(pyproject_requirement torch)" &
torch_job=$!
llama_wheel=$(llama_cpp_wheel "$PYTHON")
[ -f "$llama_wheel" ] || { echo "building llama-cpp-python failed" >&2; exit 1; }
wait "$torch_job" || { echo "installing torch failed" >&2; exit 1; }
if [ "$WITH_TEST" = 1 ]; then
  .venv/bin/uv pip install --quiet --python "$VENV_PY" "$llama_wheel" -e ".[test]"
else
  .venv/bin/uv pip install --quiet --python "$VENV_PY" "$llama_wheel" -e .
fi
# uv installs packages without their bytecode, and an editable install leaves the project's own
# modules uncompiled; where writing bytecode is switched off (PYTHONDONTWRITEBYTECODE, common in
# containers) every command would compile about a thousand modules again at start-up (about 1 s
# of a one-file `fieldguide ingest`: docs/BENCHMARKS.md). Compile them once, as pip does for a
# regular install (about 25 s on two cores the first time; up-to-date files are skipped after).
# A few packages ship files that are not Python 3 (templates, test data): they fail to compile
# and are never imported, so compileall's status is not the set-up's.
"$VENV_PY" -m compileall -q fieldguide ingest graph nodes >/dev/null
"$VENV_PY" -m compileall -q -j 0 "$("$VENV_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
  >/dev/null 2>&1 || true

if [ -n "$npm_job" ]; then
  wait "$npm_job" || { echo "npm ci failed (fieldguide/web)" >&2; exit 1; }
fi

# A local Weaviate server binary, unless an external one is configured.
if [ -z "${FIELDGUIDE_WEAVIATE_URL:-}" ]; then
  .venv/bin/fieldguide weaviate build
fi

# Debian packages the tests run for real: chromium (browser tests), redis-server (replicas share
# state through it) and postgresql (LangGraph's PostgresSaver keeps the replicas' checkpoints).
if [ "$WITH_TEST" = 1 ]; then
  missing=()
  command -v chromium >/dev/null || missing+=(chromium)
  command -v redis-server >/dev/null || missing+=(redis-server)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
  if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
      echo "note: not installed: ${missing[*]}; their tests will be skipped (sudo apt-get install ${missing[*]})" >&2
    fi
  fi
fi
# LangGraph Studio's server lives in its own environment, .venv-studio (see README);
# FIELDGUIDE_STUDIO_TESTS=0 leaves it out, and the studio test then skips.
if [ "$WITH_TEST" = 1 ] && [ "${FIELDGUIDE_STUDIO_TESTS:-1}" != 0 ]; then
  bash scripts/setup-studio.sh
fi
echo "setup done: $(.venv/bin/fieldguide --help >/dev/null && echo fieldguide ready)"
