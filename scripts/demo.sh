#!/usr/bin/env bash
# The main job: install, ingest the bundled sample documentation into a local Weaviate,
# and serve the chat page on http://127.0.0.1:8000/ (Ctrl-C stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export DISABLE_TELEMETRY=true
exec .venv/bin/fieldguide serve --docs "${DOCS_DIR:-fieldguide/sample_docs}" --host "${HOST:-127.0.0.1}" \
  --port "${PORT:-8000}" "$@"
