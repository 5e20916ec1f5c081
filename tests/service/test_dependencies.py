"""A dependency that goes down fails a question fast, in plain words (details only in the log),
and the service recovers by itself when it returns: Redis, Weaviate and the chat model, each run
for real and stopped under a running service."""
from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest

from fieldguide_testing.scripted_graph import build_scripted_graph
from fieldguide_testing.serving import SAMPLE_DOCS, make_app, serve
from tests.service.conftest import fresh_database
from tests.service.sse import iter_sse

LEAKS = ("127.0.0.1", "gRPC", "Traceback", "StatusCode", "ipv4")


def ask(client, base, question="Which fields does the booking form have?", **extra):
    began = time.monotonic()
    response = client.post(base + "/conversations", json={"question": question, **extra})
    if response.status_code != 202:
        return response, [], time.monotonic() - began
    with client.stream("GET", base + response.json()["stream_url"]) as stream:
        events = list(iter_sse(stream))
    return response, events, time.monotonic() - began


def assert_plain(message: str) -> None:
    assert "right now" in message and "try again" in message.lower()
    assert not any(leak in message for leak in LEAKS), message


def eventually_answers(client, base, within: float = 60.0):
    deadline = time.monotonic() + within
    while True:
        response, events, _ = ask(client, base)
        if response.status_code == 202 and events and events[-1].event == "done":
            return events
        assert time.monotonic() < deadline, f"the service did not recover: {response.status_code} {events[-1:]}"
        time.sleep(0.5)


def test_redis_down_fails_fast_and_the_service_recovers(postgres_server):
    from fieldguide_testing.local_servers import LocalRedis

    redis = LocalRedis().start()  # a server of its own: it is stopped and started again on its port
    try:
        factory = lambda checkpointer=None: build_scripted_graph(  # noqa: E731
            checkpointer, answer=" ".join(["word"] * 300), token_delay=0.01)
        app = make_app(factory, state_url=redis.url, checkpoint_url=fresh_database(postgres_server),
                       dependency_timeout_seconds=2.0)
        with serve(app) as base, httpx.Client(timeout=30) as client:
            assert ask(client, base)[1][-1].event == "done"

            # Redis stops while an answer streams: the reader is told, in plain words, at once
            started = client.post(base + "/conversations", json={"question": "long"}).json()
            with client.stream("GET", base + started["stream_url"]) as stream:
                events = []
                for event in iter_sse(stream):
                    events.append(event)
                    if len(events) == 10:
                        redis.stop()
                        stopped = time.monotonic()
            assert events[-1].event == "error" and events[-1].id is None  # no id: nothing to resume past
            assert_plain(events[-1].json["message"])
            assert time.monotonic() - stopped < 6

            response, _, seconds = ask(client, base)
            assert response.status_code == 503 and seconds < 6
            assert_plain(response.json()["detail"])
            ready = client.get(base + "/readyz")
            assert ready.status_code == 503 and "Redis" in ready.json()["reason"]

            redis.start()  # back (empty: it kept nothing on disk); new questions work again
            eventually_answers(client, base, within=30)
            assert client.get(base + "/readyz").status_code == 200
    finally:
        redis.close()


@pytest.mark.weaviate
@pytest.mark.models
def test_weaviate_down_fails_fast_and_the_service_recovers(tmp_path, weaviate_binary):
    from ingest.pipeline import ingest_folder

    from fieldguide import weaviate_server
    from fieldguide.service import create_app
    from fieldguide.settings import Settings
    from fieldguide_testing.serving import fresh_sqlite_url

    server = Settings(data_dir=tmp_path / "weaviate", weaviate_url=None, weaviate_binary=weaviate_binary)
    http_port, grpc_port = weaviate_server.free_port(), weaviate_server.free_port()
    weaviate_server.start(server, http_port=http_port, grpc_port=grpc_port)
    try:
        settings = Settings(weaviate_url=f"http://127.0.0.1:{http_port}", weaviate_grpc_port=grpc_port,
                            collection="DependencyDocs", docs_dir=SAMPLE_DOCS, data_dir=tmp_path / "data",
                            state_url=fresh_sqlite_url(), max_answer_tokens=16, weaviate_timeout_seconds=3.0)
        ingest_folder(SAMPLE_DOCS, settings, progress=False)
        with serve(create_app(settings)) as base, httpx.Client(timeout=120) as client:
            assert ask(client, base)[1][-1].event == "done"
            weaviate_server.stop(server)

            for _ in range(2):  # the first question finds it gone, the next fails at once
                response, events, seconds = ask(client, base)
                assert response.status_code == 202 and events[-1].event == "error"
                assert_plain(events[-1].json["message"])
                assert seconds < 10
            assert client.get(base + "/readyz").status_code == 503

            weaviate_server.start(server, http_port=http_port, grpc_port=grpc_port)
            eventually_answers(client, base, within=60)
            assert client.get(base + "/readyz").status_code == 200
    finally:
        weaviate_server.stop(server)


@pytest.mark.weaviate
@pytest.mark.models
def test_chat_model_down_fails_fast_and_the_service_recovers(weaviate_settings):
    """The chat model is an OpenAI-compatible endpoint: llama.cpp's own server over the packaged GGUF."""
    from ingest.pipeline import ingest_folder

    from fieldguide.chat import default_gguf_path
    from fieldguide.service import create_app
    from fieldguide_testing.local_servers import free_port

    port = free_port()
    settings = weaviate_settings.model_copy(update={
        "docs_dir": SAMPLE_DOCS, "max_answer_tokens": 16, "chat_provider": "openai", "chat_model": "smollm2",
        "openai_base_url": f"http://127.0.0.1:{port}/v1", "dependency_timeout_seconds": 2.0})
    ingest_folder(SAMPLE_DOCS, settings, progress=False)
    model_server = None
    try:
        with serve(create_app(settings)) as base, httpx.Client(timeout=120) as client:
            response, events, seconds = ask(client, base)  # nothing listens on the model's port
            assert events[-1].event == "error"
            assert_plain(events[-1].json["message"])
            assert seconds < 15

            model_server = subprocess.Popen(
                [sys.executable, "-m", "llama_cpp.server", "--model", default_gguf_path(), "--model_alias", "smollm2",
                 "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            events = eventually_answers(client, base, within=120)
            assert "".join(e.json["text"] for e in events if e.event == "token").strip()
    finally:
        if model_server is not None:
            model_server.terminate()
            model_server.wait(timeout=30)
