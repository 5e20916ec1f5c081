"""The service over the scripted graph, as a process of its own (tests and benchmarks).

    python -m fieldguide_testing.scripted_server --port 8000 [--token-delay 0.01] [--words 200] [--save-delay 0.3]

It reads the same `FIELDGUIDE_*` settings as `fieldguide serve` (the state URL above all),
needs no models and no Weaviate, and streams a scripted answer: "Turn {turn}: " and then
`--words` numbered words, so a reader can tell exactly which tokens it got and whether a
follow-up saw the conversation's history. `--one-at-a-time` lets one answer be generated at
a time in the process, as with one local model per replica (llama.cpp serves one generation
at a time): the replica's own capacity, not the client, then limits its throughput.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


def scripted_answer(words: int) -> str:
    return "Turn {turn}: " + " ".join(f"w{n}" for n in range(words))


def slow_saves(checkpointer, seconds: float) -> None:
    """Make each of `checkpointer`'s async saves take `seconds` longer: a save then spans many turns
    of the event loop, as it does against a real store, which is where a shutdown could cut it short."""
    import asyncio

    save = checkpointer.aput

    async def aput(*args, **kwargs):
        await asyncio.sleep(seconds)
        return await save(*args, **kwargs)

    checkpointer.aput = aput


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token-delay", type=float, default=0.0, help="seconds between tokens (sleeping)")
    parser.add_argument("--words", type=int, default=200, help="words in the scripted answer")
    parser.add_argument("--answer", help="the answer's text instead ({question} and {turn} are filled in)")
    parser.add_argument("--one-at-a-time", action="store_true", help="one generation at a time per process")
    parser.add_argument("--save-delay", type=float, default=0.0,
                        help="seconds each checkpoint save takes (sleeping), as with a store across a network")
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)

    from fieldguide.service.memory import limit_malloc_arenas

    limit_malloc_arenas()
    import uvicorn

    from fieldguide.service import create_app
    from fieldguide.settings import get_settings
    from fieldguide_testing.scripted_graph import build_scripted_graph

    answer = args.answer or scripted_answer(args.words)

    def factory(checkpointer=None):
        if checkpointer is not None and args.save_delay > 0:
            slow_saves(checkpointer, args.save_delay)
        return build_scripted_graph(checkpointer, answer=answer, token_delay=args.token_delay,
                                    one_at_a_time=args.one_at_a_time)

    app = create_app(get_settings(), factory, readiness=lambda: None)
    started = time.perf_counter()
    print(f"scripted service on http://{args.host}:{args.port}/ (state {app.state.service.state.url}, "
          f"built in {time.perf_counter() - started:.2f}s)", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False,
                timeout_graceful_shutdown=5)
    return 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServiceProcess:
    """`python -m fieldguide_testing.scripted_server` as a child process on loopback.

    `start()` waits for /healthz; `kill()` ends it with SIGKILL (a crash: nothing is
    flushed or closed), `stop()` with SIGTERM (a deploy); `start()` again restarts it on
    the same port with the same settings, as a supervisor would.
    """

    def __init__(self, env: dict[str, str], *, port: int | None = None, args: list[str] = (),
                 log_path: str | None = None) -> None:
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, **env}
        self.args = list(args)
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    # Importing the service takes 20-50 s on two cores shared with other heavy jobs: a start
    # gives up only when it is clearly stuck.
    def start(self, timeout: float = 180.0) -> "ServiceProcess":
        output = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fieldguide_testing.scripted_server", "--port", str(self.port), *self.args],
            env=self.env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the scripted service exited with status {self.process.returncode}"
                                   + (f" (see {self.log_path})" if self.log_path else ""))
            try:
                with urllib.request.urlopen(self.base + "/healthz", timeout=1) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"the scripted service did not start within {timeout:g} s")
            time.sleep(0.05)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def rss_mb(self) -> float:
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def kill(self) -> None:
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        self._end(signal.SIGTERM)

    def _end(self, sig: int) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)

    def __enter__(self) -> "ServiceProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":
    raise SystemExit(main())
