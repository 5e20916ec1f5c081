"""The local chat model in a process of its own: llama.cpp behind its OpenAI-compatible server.

fieldguide never loads llama.cpp into its own process. A native library that crashes (an
instruction the CPU lists but traps on, a segmentation fault, the kernel's OOM killer) would
take every conversation in flight with it; in a child process it takes one answer. The child is
llama-cpp-python's own server (`python -m llama_cpp.server`, its `server` extra) on a loopback
port, and fieldguide talks to it through `langchain_openai.ChatOpenAI`, the same code path as any
hosted endpoint (`fieldguide.chat`).

`LocalModelServer` supervises one child:
- `start()` launches it and returns at once (the service starts it in the background, so start-up
  stays quick; `/readyz` reports `state()`);
- `ensure_ready()` waits until it answers, starting it again first when it has died: the next
  question after a crash restarts the model;
- the port stays the same across restarts, so a chat client built once keeps working;
- the child dies with its parent (Linux `PR_SET_PDEATHSIG`), and `stop()` (also at exit) ends it.
  The kernel sends that signal when the *thread* that forked the child ends, not the process:
  every child is therefore forked by one spawner thread that lives as long as the process
  (`_spawn`), never by the short-lived thread that happened to ask for the model first.

One server per (model file, context window, threads) in a process (`server_for`): every
`Resources` of the process shares it, as they shared one loaded model before.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from fieldguide.errors import ModelCrashed, ModelUnavailable
from fieldguide.processes import end_process

HOST = "127.0.0.1"
MODEL_ALIAS = "local"
READY_TIMEOUT_SECONDS = 120.0
# libgomp reads this when the child loads llama.cpp: its threads sleep at a wait instead of
# spinning, which on shared cores takes the CPU from the thread being waited for.
OPENMP_WAIT_POLICY = "PASSIVE"
# llama.cpp's server reads these from its environment ahead of its command line: a service started
# with PORT=9000 would make the child bind the service's own port and never start.
SERVER_ENVIRONMENT = ("HOST", "PORT", "CONFIG_FILE")
_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def exit_description(returncode: int | None) -> str:
    """'killed by SIGKILL', 'exited with status 1', … for a child's return code."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


class _Spawner:
    """One thread, alive as long as the process, that forks every model child (see the module doc)."""

    def __init__(self):
        import queue

        self._requests: "queue.Queue" = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, *args, **kwargs) -> subprocess.Popen:
        from concurrent.futures import Future

        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="fieldguide-model-spawner", daemon=True)
                self._thread.start()
        done: Future = Future()
        self._requests.put((done, args, kwargs))
        return done.result()

    def _serve(self) -> None:
        while True:
            done, args, kwargs = self._requests.get()
            try:
                done.set_result(subprocess.Popen(*args, **kwargs))
            except BaseException as exc:  # handed to the caller, which raises it
                done.set_exception(exc)


_spawner = _Spawner()


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: stop() and atexit still end the child
        pass


class LocalModelServer:
    """One supervised llama.cpp server child process serving a GGUF file on loopback."""

    def __init__(self, model_path: str, n_ctx: int, n_threads: int, log_dir: Path | None = None,
                 ready_timeout: float = READY_TIMEOUT_SECONDS):
        self.model_path = str(model_path)
        self.n_ctx = int(n_ctx)
        self.n_threads = max(1, int(n_threads))
        self.ready_timeout = ready_timeout
        self.port = free_port()
        self.log_path = Path(log_dir or tempfile.gettempdir()) / f"fieldguide-model-{os.getpid()}-{self.port}.log"
        self.restarts = 0
        self.last_exit: str | None = None
        self._process: subprocess.Popen | None = None
        self._log = None
        self._ready = False
        self._lock = threading.RLock()

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", self.model_path,
                "--model_alias", MODEL_ALIAS, "--host", HOST, "--port", str(self.port),
                "--n_ctx", str(self.n_ctx), "--n_threads", str(self.n_threads),
                "--n_threads_batch", str(self.n_threads),
                # its default stops a stream whenever another request arrives; concurrent answers
                # wait their turn instead
                "--interrupt_requests", "False"]

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def state(self) -> str:
        """'ready', 'starting', 'stopped' (never started or stopped) or 'crashed'."""
        with self._lock:
            if self.alive():
                return "ready" if self._ready else "starting"
            if self._process is None:
                return "crashed" if self.last_exit else "stopped"
            return "crashed"

    def start(self) -> None:
        """Launch the child unless it runs; returns without waiting for it to answer."""
        with self._lock:
            if self.alive():
                return
            if not os.path.isfile(self.model_path):
                raise ModelUnavailable(f"GGUF chat model not found: {self.model_path}")
            if self._process is not None:  # it ended: note how, and start again
                self.last_exit = exit_description(self._process.poll())
                self.restarts += 1
                self._close_log()
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            # A file, not a pipe: the server logs every request and must never block on a full pipe.
            self._log = open(self.log_path, "ab")
            env = {name: value for name, value in os.environ.items() if name not in SERVER_ENVIRONMENT}
            env["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY", OPENMP_WAIT_POLICY)
            self._ready = False
            self._process = _spawner.popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, env=env, preexec_fn=_die_with_parent)

    def ensure_ready(self) -> None:
        """Block until the server answers, (re)starting it first when it is not running."""
        import httpx

        with self._lock:
            if self.alive() and self._ready:
                return
            self.start()
            process = self._process
            deadline = time.monotonic() + self.ready_timeout
            while True:
                if process.poll() is not None:
                    self.last_exit = exit_description(process.returncode)
                    raise ModelUnavailable(
                        f"the local model process {self.last_exit} while starting: {self.log_tail()}")
                try:
                    if httpx.get(self.base_url + "/models", timeout=2.0).status_code == 200:
                        self._ready = True
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise ModelUnavailable(f"the local model process did not answer within {self.ready_timeout:.0f} s")
                time.sleep(0.1)

    def failure(self, exc: BaseException) -> BaseException:
        """What a failed call means: `ModelCrashed` when the child has ended (it starts again on the
        next call), the call's own error otherwise."""
        with self._lock:
            process = self._process
            if process is not None:
                try:  # a connection reset can reach the client a moment before the exit is reaped
                    process.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    pass
            if process is None or process.poll() is None:
                return exc
            self._ready = False
            self.last_exit = exit_description(process.returncode)
            return ModelCrashed(f"the local model process stopped while answering ({self.last_exit}); "
                                "it starts again for the next question")

    def log_tail(self, limit: int = 1500) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return " ".join(text[-limit:].split())

    def stop(self) -> None:
        with self._lock:
            process, self._process = self._process, None
            self._ready = False
            end_process(process, 10)
            self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


_servers: dict[tuple, LocalModelServer] = {}
_servers_lock = threading.Lock()


def server_for(model_path: str, n_ctx: int, n_threads: int, log_dir: Path | None = None) -> LocalModelServer:
    """The process's server for this model file, context window and thread count (made once)."""
    key = (str(model_path), int(n_ctx), int(n_threads))
    with _servers_lock:
        server = _servers.get(key)
        if server is None:
            server = _servers[key] = LocalModelServer(model_path, n_ctx, n_threads, log_dir)
        return server


def running_servers() -> list[LocalModelServer]:
    with _servers_lock:
        return list(_servers.values())


@atexit.register
def stop_all() -> None:
    for server in running_servers():
        server.stop()
