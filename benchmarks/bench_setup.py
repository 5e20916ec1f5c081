"""Set-up on a fresh machine: a clean clone with empty package caches, to its first test and to a served page.

    python3 benchmarks/bench_setup.py [--what test demo] [--keep]

For each of `--what`, a fresh clone of this checkout (its committed HEAD) is made in a temporary
folder, and every cache the set-up reads is pointed at an empty folder of its own: uv's and pip's
package caches, npm's, Go's module and build caches, fieldguide's build cache (the llama.cpp
wheel) and data dir (the Weaviate binary, the exported embedding model). Then:

* `test`: `bash scripts/test.sh --collect-only -q`, timed to the end of collection: the moment
  the first test would start.
* `demo`: `bash scripts/demo.sh` on a free port, timed until `GET /` answers 200 (the sample docs
  ingested and the page served), then stopped.

Debian packages are not removed first (chromium, redis-server, postgresql): on a machine without
them `setup.sh --test` installs them in parallel with the rest. Prints one JSON line per run:
seconds, the load average before and after, the share of each background step (from the logs'
times in build/logs/) and the environments' size on disk.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def fresh_environment(base: Path) -> dict[str, str]:
    caches = {name: base / "caches" / name for name in
              ("uv", "pip", "npm", "gomod", "gocache", "fieldguide-build", "fieldguide-data", "xdg-cache")}
    for folder in caches.values():
        folder.mkdir(parents=True)
    env = dict(os.environ)
    env.update({"UV_CACHE_DIR": str(caches["uv"]), "PIP_CACHE_DIR": str(caches["pip"]),
                "npm_config_cache": str(caches["npm"]), "GOMODCACHE": str(caches["gomod"]),
                "GOCACHE": str(caches["gocache"]), "FIELDGUIDE_BUILD_CACHE": str(caches["fieldguide-build"]),
                "FIELDGUIDE_DATA_DIR": str(caches["fieldguide-data"]), "XDG_CACHE_HOME": str(caches["xdg-cache"]),
                "CI": "true"})
    env.pop("FIELDGUIDE_WEAVIATE_URL", None)
    env.pop("VIRTUAL_ENV", None)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def disk_mib(path: Path) -> float:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return round(total / 2**20, 1)


def step_seconds(clone: Path, started: float) -> dict[str, float]:
    """When each background step's log was last written, in seconds from the start."""
    logs = clone / "build" / "logs"
    if not logs.is_dir():
        return {}
    return {log.stem: round(log.stat().st_mtime - started, 1) for log in sorted(logs.glob("*.log"))}


def run_test(clone: Path, env: dict) -> dict:
    started = time.time()
    result = subprocess.run(["bash", "scripts/test.sh", "--collect-only", "-q"], cwd=clone, env=env,
                            capture_output=True, text=True)
    seconds = time.time() - started
    collected = [line for line in result.stdout.splitlines() if "tests collected" in line or "collected" in line]
    return {"seconds_to_first_test": round(seconds, 1), "exit": result.returncode,
            "collected": collected[-1] if collected else result.stdout[-500:] + result.stderr[-1500:],
            "steps_done_at": step_seconds(clone, started)}


def run_demo(clone: Path, env: dict) -> dict:
    port = free_port()
    started = time.time()
    process = subprocess.Popen(["bash", "scripts/demo.sh"], cwd=clone, env={**env, "PORT": str(port)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    served = None
    try:
        while process.poll() is None and time.time() - started < 3600:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    if response.status == 200:
                        served = time.time() - started
                        break
            except OSError:
                pass
            time.sleep(1)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 15)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
    return {"seconds_to_served_page": round(served, 1) if served else None,
            "stderr_tail": "" if served else (process.stderr.read() or "")[-1500:],
            "steps_done_at": step_seconds(clone, started)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--what", nargs="+", choices=("test", "demo"), default=["test", "demo"])
    parser.add_argument("--keep", action="store_true", help="leave the clones and caches (their path is printed)")
    args = parser.parse_args()
    for what in args.what:
        base = Path(tempfile.mkdtemp(prefix=f"fieldguide-setup-{what}-"))
        try:
            clone = base / "fieldguide"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
            env = fresh_environment(base)
            load_before = os.getloadavg()
            figures = run_test(clone, env) if what == "test" else run_demo(clone, env)
            figures.update({
                "what": what, "load_before": [round(x, 2) for x in load_before],
                "load_after": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count(),
                "venv_mib": disk_mib(clone / ".venv") if (clone / ".venv").exists() else None,
                "venv_studio_mib": disk_mib(clone / ".venv-studio") if (clone / ".venv-studio").exists() else None,
                "caches_mib": disk_mib(base / "caches")})
            if args.keep:
                figures["kept"] = str(base)
            print(json.dumps(figures), flush=True)
        finally:
            if not args.keep:
                shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
