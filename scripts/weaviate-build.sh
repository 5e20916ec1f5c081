#!/usr/bin/env bash
# Builds the weaviate-server binary into fieldguide's data dir, as `fieldguide weaviate build`
# does, without needing fieldguide's Python environment: setup.sh runs it while that environment
# installs. The version and package are read from fieldguide/weaviate_binary.py, the one place
# they are written. Skipped when the binary is already there (it is kept across clones).
set -euo pipefail
cd "$(dirname "$0")/.."
constant() { grep -o "^$1 = \"[^\"]*\"" fieldguide/weaviate_binary.py | cut -d'"' -f2; }
version=$(constant WEAVIATE_VERSION)
package=$(constant GO_PACKAGE)
name=$(constant BINARY_NAME)
data_dir="${FIELDGUIDE_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/fieldguide}"
target="$data_dir/bin/$name"
if [ -x "$target" ]; then
  echo "already built: $target"
  exit 0
fi
if ! command -v go >/dev/null; then
  echo "no Go toolchain: fieldguide will download the release binary on first use (or set FIELDGUIDE_WEAVIATE_URL)"
  exit 0
fi
mkdir -p "$data_dir/bin"
echo "go install $package@v$version"
# -s -w: no symbol table or DWARF (a smaller binary, a quicker link); -trimpath: no build paths in it
GOBIN="$data_dir/bin" CGO_ENABLED="${CGO_ENABLED:-0}" go install -trimpath -ldflags="-s -w" "$package@v$version"
echo "built: $target"
