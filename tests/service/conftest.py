"""Service test fixtures: the app on a real uvicorn server on loopback, with a scripted graph."""
from __future__ import annotations

import contextlib
import subprocess
import uuid

import httpx
import pytest

from fieldguide_testing.scripted_graph import build_scripted_graph
from fieldguide_testing.serving import fresh_sqlite_url, make_app, serve
from tests.conftest import missing


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


def _needs(what: str, error: Exception):
    missing(f"{what} is not available ({error}); scripts/setup.sh --test installs it")


@pytest.fixture(scope="session")
def redis_server():
    """Debian's redis-server on a free loopback port for the whole run (fail under CI, else skip)."""
    from fieldguide_testing.local_servers import LocalRedis

    try:
        server = LocalRedis().start()
    except (FileNotFoundError, RuntimeError) as exc:
        _needs("redis-server", exc)
    yield server
    server.close()


@pytest.fixture(scope="session")
def postgres_server():
    """Debian's Postgres, a cluster of its own on a free loopback port (fail under CI, else skip)."""
    from fieldguide_testing.local_servers import LocalPostgres

    try:
        server = LocalPostgres().start()
    except (FileNotFoundError, RuntimeError, OSError, subprocess.CalledProcessError) as exc:
        _needs("Postgres", exc)
    yield server
    server.close()


def fresh_database(postgres_server) -> str:
    """A new, empty Postgres database on the test server; its URL."""
    import psycopg

    name = "fg_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_server.url.rsplit("/", 1)[0] + "/" + name


def fresh_redis(redis_server, db: int = 0) -> str:
    """The test Redis emptied; its URL."""
    import redis

    url = redis_server.url.rsplit("/", 1)[0] + f"/{db}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()
    return url


@pytest.fixture(params=["sqlite", "memory", "redis"])
def backend(request):
    """Settings for each state backend in turn: {"state_url", "checkpoint_url"}."""
    if request.param == "sqlite":
        return {"state_url": fresh_sqlite_url()}
    if request.param == "memory":
        return {"state_url": "memory://"}
    redis_server = request.getfixturevalue("redis_server")
    postgres_server = request.getfixturevalue("postgres_server")
    return {"state_url": fresh_redis(redis_server), "checkpoint_url": fresh_database(postgres_server)}
