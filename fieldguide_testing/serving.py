"""The app on a real uvicorn server on loopback, in a thread: settings for a test or a benchmark
(the sample docs, short heartbeats, a throw-away SQLite state) and the scripted graph by default."""
from __future__ import annotations

import atexit
import contextlib
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import uvicorn

import fieldguide
from fieldguide.service import create_app
from fieldguide.settings import Settings
from fieldguide_testing.scripted_graph import build_scripted_graph

SAMPLE_DOCS = Path(fieldguide.__file__).resolve().parent / "sample_docs"  # the docs the demo ingests


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serve(app, port: int | None = None):
    """Run `app` with uvicorn in a thread; yield its base URL; stop it afterwards."""
    port = port or free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def fresh_sqlite_url() -> str:
    """The default backend (a SQLite file) in a throw-away folder of its own (removed at exit)."""
    folder = tempfile.mkdtemp(prefix="fieldguide-state-")
    atexit.register(shutil.rmtree, folder, True)
    return f"sqlite:///{folder}/conversations.sqlite"


def make_settings(**overrides) -> Settings:
    values = {"heartbeat_seconds": 15.0, "abandon_after_seconds": 30.0, "docs_dir": SAMPLE_DOCS}
    values.update(overrides)
    values.setdefault("state_url", fresh_sqlite_url())
    return Settings(**values)


def make_app(graph_factory=None, *, readiness=lambda: None, **settings):
    factory = graph_factory or build_scripted_graph
    return create_app(make_settings(**settings), factory, readiness=readiness)
