#!/usr/bin/env bash
# The test command: installs what the tests need, then runs the whole suite. The tests
# start their own Weaviate server on free loopback ports; nothing else must be running.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
export DISABLE_TELEMETRY=true HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
