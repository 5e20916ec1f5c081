"""Service test fixtures: the app on a real uvicorn server on loopback, with a scripted graph."""
from __future__ import annotations

import contextlib
import socket
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn

from fieldguide.service import create_app
from fieldguide.service.scripted_graph import build_scripted_graph
from fieldguide.settings import Settings

SAMPLE_DOCS = Path(__file__).resolve().parents[2] / "fieldguide" / "sample_docs"


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
    """The default backend (a SQLite file) in a throw-away folder of its own."""
    return f"sqlite:///{tempfile.mkdtemp(prefix='fieldguide-state-')}/conversations.sqlite"


def make_settings(**overrides) -> Settings:
    values = {"heartbeat_seconds": 15.0, "abandon_after_seconds": 30.0, "docs_dir": SAMPLE_DOCS}
    values.update(overrides)
    values.setdefault("state_url", fresh_sqlite_url())
    return Settings(**values)


def make_app(graph_factory=None, *, readiness=lambda: None, **settings):
    factory = graph_factory or build_scripted_graph
    return create_app(make_settings(**settings), factory, readiness=readiness)


@pytest.fixture
def server_for():
    """`server_for(app)` → base URL of a live server running `app` (stopped after the test)."""
    with contextlib.ExitStack() as stack:
        yield lambda app: stack.enter_context(serve(app))


@pytest.fixture(scope="module")
def slow_server():
    """A server whose scripted answer streams one word every 5 ms (time to drop connections)."""
    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, token_delay=0.005)

    with serve(make_app(factory)) as url:
        yield url


@pytest.fixture(scope="module")
def fast_server():
    with serve(make_app()) as url:
        yield url


@pytest.fixture
def client():
    with httpx.Client(timeout=30) as http:
        yield http
