"""The local Weaviate server's files (`ServerPaths`) and its binary: found, built or downloaded.

The binary is searched in this order: `FIELDGUIDE_WEAVIATE_BINARY`, `<data_dir>/bin`,
`$GOBIN` / `$(go env GOPATH)/bin`, `PATH`. Without one, `fieldguide weaviate build` compiles it
with `go install`; without Go, weaviate-client's embedded-mode download fetches the release
binary (needs internet). scripts/weaviate-build.sh reads the version and package from here.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fieldguide.errors import StoreUnavailable

WEAVIATE_VERSION = "1.39.0"
GO_PACKAGE = "github.com/weaviate/weaviate/cmd/weaviate-server"
BINARY_NAME = "weaviate-server"

WHAT_TO_DO = (
    "Either point fieldguide at a running Weaviate with FIELDGUIDE_WEAVIATE_URL "
    "(for example `docker compose up -d weaviate`, then FIELDGUIDE_WEAVIATE_URL=http://localhost:8080), "
    "or build the local server once with `fieldguide weaviate build` (needs Go: https://go.dev/dl/)."
)


@dataclass
class ServerPaths:
    root: Path

    @property
    def persistence(self) -> Path:
        return self.root / "weaviate"

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    @property
    def log(self) -> Path:
        return self.root / "weaviate-server.log"

    @property
    def state(self) -> Path:
        # pid and every port of the running server
        return self.root / "weaviate-server.json"

    @property
    def lock(self) -> Path:
        return self.root / "weaviate-server.lock"

    # the local cluster (FIELDGUIDE_LOCAL_NODES > 1)
    @property
    def cluster_root(self) -> Path:
        return self.root / "weaviate-cluster"

    @property
    def cluster_state(self) -> Path:
        return self.root / "weaviate-cluster.json"


def _go_bin_dirs() -> list[Path]:
    dirs: list[Path] = []
    if os.environ.get("GOBIN"):
        dirs.append(Path(os.environ["GOBIN"]))
    go = shutil.which("go")
    if go:
        try:
            out = subprocess.run([go, "env", "GOBIN", "GOPATH"], capture_output=True, text=True, timeout=30)
            gobin, gopath = (out.stdout.splitlines() + ["", ""])[:2]
            if gobin.strip():
                dirs.append(Path(gobin.strip()))
            for entry in gopath.strip().split(os.pathsep):
                if entry:
                    dirs.append(Path(entry) / "bin")
        except (OSError, subprocess.SubprocessError):
            pass
    if os.environ.get("GOPATH"):
        dirs.extend(Path(p) / "bin" for p in os.environ["GOPATH"].split(os.pathsep) if p)
    dirs.append(Path.home() / "go" / "bin")  # go's default GOPATH
    return dirs


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_binary(settings) -> Path | None:
    """The weaviate-server binary to run, or None."""
    if settings.weaviate_binary:
        path = Path(settings.weaviate_binary).expanduser()
        if not _is_executable(path):
            raise StoreUnavailable(f"FIELDGUIDE_WEAVIATE_BINARY={path} is not an executable file.")
        return path
    candidates = [ServerPaths(Path(settings.data_dir)).bin_dir / BINARY_NAME]
    candidates += [d / BINARY_NAME for d in _go_bin_dirs()]
    for path in candidates:
        if _is_executable(path):
            return path
    on_path = shutil.which(BINARY_NAME)
    return Path(on_path) if on_path else None


def build_binary(settings, force: bool = False, log=print) -> Path:
    """Put a weaviate-server binary into `<data_dir>/bin`: copy a Go-built one or `go install` it."""
    paths = ServerPaths(Path(settings.data_dir))
    target = paths.bin_dir / BINARY_NAME
    paths.bin_dir.mkdir(parents=True, exist_ok=True)
    if _is_executable(target) and not force:
        log(f"already built: {target}")
        return target
    if not force:
        for directory in _go_bin_dirs():
            built = directory / BINARY_NAME
            if _is_executable(built):
                log(f"copying {built} -> {target}")
                shutil.copy2(built, target)
                return target
    go = shutil.which("go")
    if not go:
        return download_binary(settings, log=log)
    log(f"go install {GO_PACKAGE}@v{WEAVIATE_VERSION} (a few minutes the first time)")
    env = dict(os.environ, GOBIN=str(paths.bin_dir), CGO_ENABLED=os.environ.get("CGO_ENABLED", "0"))
    # no symbol table or DWARF: a smaller binary and a quicker link (scripts/weaviate-build.sh does the same)
    result = subprocess.run([go, "install", "-trimpath", "-ldflags=-s -w", f"{GO_PACKAGE}@v{WEAVIATE_VERSION}"],
                            env=env)
    if result.returncode != 0 or not _is_executable(target):
        raise StoreUnavailable(f"`go install {GO_PACKAGE}@v{WEAVIATE_VERSION}` failed (see its output above).")
    return target


def download_binary(settings, log=print) -> Path:
    """Fetch the release binary the way weaviate-client's embedded mode does (needs internet)."""
    paths = ServerPaths(Path(settings.data_dir))
    target = paths.bin_dir / BINARY_NAME
    paths.bin_dir.mkdir(parents=True, exist_ok=True)
    try:
        from weaviate.embedded import EmbeddedOptions, EmbeddedV4

        options = EmbeddedOptions(
            binary_path=str(paths.bin_dir / "embedded"),
            persistence_data_path=str(paths.persistence),
            version=WEAVIATE_VERSION,
        )
        log(f"downloading Weaviate {WEAVIATE_VERSION} release binary")
        embedded = EmbeddedV4(options)
        embedded.ensure_weaviate_binary_exists()
        downloaded = Path(embedded._weaviate_binary_path)
    except Exception as exc:  # no network, unsupported platform, ...
        raise StoreUnavailable(f"No weaviate-server binary and the download failed ({exc}). {WHAT_TO_DO}") from exc
    shutil.copy2(downloaded, target)
    target.chmod(0o755)
    return target
