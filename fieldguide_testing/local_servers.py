"""Redis and Postgres on loopback, from Debian's packages (`redis-server`, `postgresql`).

For the tests, the benchmarks and for trying several replicas on one machine: each server
runs in a throw-away folder on a free port, as a child process that `stop()` ends. Postgres
refuses to run as root, so under root it runs as the `postgres` user the Debian package
creates.
"""
from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from fieldguide.processes import end_process

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int, process: subprocess.Popen, timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with status {process.returncode}: {_tail(log)}")
        with socket.socket() as sock:
            sock.settimeout(0.2)
            if sock.connect_ex((HOST, port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout:g} s: {_tail(log)}")


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def redis_binary() -> str | None:
    return shutil.which("redis-server")


class LocalRedis:
    """`redis-server` on a free loopback port, persistence off (the tests' data is throw-away)."""

    def __init__(self, port: int | None = None) -> None:
        binary = redis_binary()
        if binary is None:
            raise FileNotFoundError("redis-server is not installed (Debian: apt-get install redis-server)")
        self.binary = binary
        self.port = port or free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="fieldguide-redis-"))
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def start(self, timeout: float = 20.0) -> "LocalRedis":
        log = self.folder / "redis.log"
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", HOST, "--save", "", "--appendonly", "no",
             "--dir", str(self.folder), "--logfile", str(log)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        _wait_port(self.port, self.process, timeout, "redis-server", log)
        return self

    def stop(self) -> None:
        end_process(self.process, 10)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def postgres_bin_dir() -> Path | None:
    for name in ("initdb", "pg_ctl"):
        found = shutil.which(name)
        if found and Path(found).resolve().parent.joinpath("postgres").exists():
            return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


class LocalPostgres:
    """A Postgres cluster of its own (initdb) on a free loopback port, trust authentication."""

    def __init__(self, port: int | None = None) -> None:
        bin_dir = postgres_bin_dir()
        if bin_dir is None:
            raise FileNotFoundError("Postgres is not installed (Debian: apt-get install postgresql)")
        self.bin_dir = bin_dir
        self.port = port or free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="fieldguide-postgres-"))
        self.data = self.folder / "data"
        self.process: subprocess.Popen | None = None
        self._as = []
        if os.geteuid() == 0:  # initdb and postgres refuse root
            import pwd

            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    @property
    def url(self) -> str:
        return f"postgresql://postgres@{HOST}:{self.port}/postgres"

    def start(self, timeout: float = 60.0) -> "LocalPostgres":
        log = self.folder / "postgres.log"
        if not self.data.exists():
            subprocess.run([*self._as, str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres",
                            "-A", "trust", "-E", "UTF8", "--no-sync"],
                           check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.process = subprocess.Popen(
            [*self._as, str(self.bin_dir / "postgres"), "-D", str(self.data), "-p", str(self.port), "-h", HOST,
             "-k", str(self.folder), "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", f"log_directory={self.folder}", "-c", "logging_collector=off"],
            stdin=subprocess.DEVNULL, stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True)
        _wait_port(self.port, self.process, timeout, "postgres", log)
        self._wait_accepting(timeout)
        return self

    def _wait_accepting(self, timeout: float) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.url, connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        # SIGINT: Postgres' "fast" shutdown (runuser passes the signal on)
        end_process(self.process, 20, signal.SIGINT, group=True)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
