"""Every route fails cleanly on bad input: a 4xx with a message, and nothing logged as an error."""
from __future__ import annotations

import contextlib
import logging

import httpx
import pytest

from fieldguide_testing.scripted_graph import build_scripted_graph
from fieldguide_testing.serving import make_app, serve

JSON = {"content-type": "application/json"}
MCP = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

BAD_REQUESTS = [
    ("POST", "/conversations", {"content": b"{not json", "headers": JSON}),
    ("POST", "/conversations", {"json": {}}),
    ("POST", "/conversations", {"json": {"question": "   "}}),
    ("POST", "/conversations", {"json": {"question": "x" * 5000}}),
    ("POST", "/conversations", {"json": {"question": "Hi?", "conversation_id": "../../etc"}}),
    ("POST", "/conversations", {"json": {"question": "Hi?", "conversation_id": "unknown"}}),
    ("GET", "/conversations/unknown/stream", {}),
    ("POST", "/rag/invoke", {"content": b"{not json", "headers": JSON}),
    ("POST", "/rag/invoke", {"json": {"input": {}}}),
    ("POST", "/rag/invoke", {"json": {"input": {"question": "Hi?"}, "config": {"configurable": {"max_chunks": 0}}}}),
    ("POST", "/rag/stream", {"json": {"input": {"question": "Hi?"}, "config": {"configurable": {"search_k": 10**6}}}}),
    ("POST", "/rag/stream_events", {"json": {"input": {"question": 3}}}),
    ("POST", "/v1/chat/completions", {"content": b"[1, 2", "headers": JSON}),
    ("POST", "/v1/chat/completions", {"json": {"model": "fieldguide"}}),
    ("POST", "/v1/chat/completions", {"json": {"model": "fieldguide", "messages": [{"role": "user", "content": 7}]}}),
    ("POST", "/v1/chat/completions", {"json": {"model": "fieldguide", "stream": True, "max_tokens": -1,
                                               "messages": [{"role": "user", "content": "Hi?"}]}}),
    ("GET", "/v1/models/not-a-model", {}),
    ("POST", "/mcp", {"content": b"{not json", "headers": MCP}),
    ("POST", "/mcp", {"json": {"jsonrpc": "2.0", "id": 1, "method": "no/such/method"}, "headers": MCP}),
    ("GET", "/docs-assets/../pyproject.toml", {}),
    ("GET", "/docs-assets/screens/nothing.png", {}),
    ("GET", "/static/nothing.js", {}),
    ("GET", "/vendor/nothing.js", {}),
]


class Recorder(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


# uvicorn's loggers do not pass their records on to the root logger: listen to both.
LOGGERS = ("", "uvicorn", "uvicorn.error")


@contextlib.contextmanager
def recording():
    recorder = Recorder()
    for name in LOGGERS:
        logging.getLogger(name).addHandler(recorder)
    try:
        yield recorder
    finally:
        for name in LOGGERS:
            logging.getLogger(name).removeHandler(recorder)


@pytest.fixture(scope="module")
def guarded_server():
    with recording() as recorder, serve(make_app()) as base:
        yield base, recorder


@pytest.mark.parametrize("method, path, request_args", BAD_REQUESTS)
def test_bad_input_gets_a_4xx_with_a_message_and_no_error_in_the_logs(guarded_server, method, path, request_args):
    base, recorder = guarded_server
    recorder.records.clear()
    response = httpx.request(method, base + path, timeout=30, **request_args)
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    assert response.text.strip(), "the refusal says nothing"
    if "json" in response.headers.get("content-type", ""):
        body = response.json()
        message = body.get("detail") or body.get("error") or body
        assert message, body
    errors = [r for r in recorder.records if r.levelno >= logging.ERROR or r.exc_info]
    assert errors == [], [r.getMessage() for r in errors]


def test_the_recorder_does_see_a_failure_that_is_logged():
    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, fail_with=RuntimeError("boom"))

    with recording() as recorder, serve(make_app(factory)) as base:
        response = httpx.post(base + "/v1/chat/completions", timeout=30, json={
            "model": "fieldguide", "messages": [{"role": "user", "content": "Hi?"}]})
    assert response.status_code == 500
    assert any(r.exc_info for r in recorder.records)
