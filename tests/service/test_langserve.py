"""LangServe routes at /rag, driven by RemoteRunnable against a real server on loopback."""
from __future__ import annotations

import asyncio

import httpx
import pytest
from langserve import RemoteRunnable

from fieldguide_testing.scripted_graph import DEFAULT_ANSWER, build_scripted_graph, split_tokens
from fieldguide_testing.serving import make_app, serve


@pytest.fixture(scope="module")
def rag_server():
    app = make_app()
    with serve(app) as base:
        yield base, app


def test_invoke_returns_the_final_state(rag_server):
    base, _ = rag_server
    result = RemoteRunnable(base + "/rag/", timeout=30).invoke({"question": "Which fields does the form have?"})
    assert result["answer"] == DEFAULT_ANSWER
    assert result["intent"] == "screen" and result["abstain"] is False
    assert result["context"][0]["source"] == "screens/booking-form.md"


def test_stream_yields_node_updates(rag_server):
    base, _ = rag_server
    chunks = list(RemoteRunnable(base + "/rag/", timeout=30).stream({"question": "Which fields?"}))
    assert chunks, "nothing streamed"
    updates = {node: update for chunk in chunks for node, update in chunk.items()}
    assert list(updates) == ["route", "search", "generate"]
    assert updates["generate"]["answer"] == DEFAULT_ANSWER


def test_astream_events_carries_the_tokens(rag_server):
    base, _ = rag_server

    async def collect():
        tokens = []
        async for event in RemoteRunnable(base + "/rag/", timeout=30).astream_events(
                {"question": "Which fields?"}, version="v2"):
            if event["event"] == "on_chat_model_stream" and event["data"]["chunk"].content:
                tokens.append(event["data"]["chunk"].content)
        return tokens

    tokens = asyncio.run(collect())
    assert tokens == split_tokens(DEFAULT_ANSWER)


def test_each_call_gets_its_own_thread_unless_one_is_named(rag_server):
    base, app = rag_server
    graph = app.state.service.graph
    anonymous = RemoteRunnable(base + "/rag/", timeout=30)
    anonymous.invoke({"question": "one"})
    anonymous.invoke({"question": "two"})
    named = RemoteRunnable(base + "/rag/", timeout=30, headers={"X-Thread-Id": "desk-7"})
    named.invoke({"question": "first"})
    named.invoke({"question": "second"})
    state = graph.get_state({"configurable": {"thread_id": "desk-7"}})
    assert state.values["questions"] == ["first", "second"]


def test_playground_and_schemas_are_served(rag_server):
    base, _ = rag_server
    with httpx.Client(timeout=30) as client:
        page = client.get(base + "/rag/playground/")
        assert page.status_code == 200 and "<html" in page.text.lower()
        schema = client.get(base + "/rag/input_schema").json()
        if "$ref" in schema:
            schema = schema["$defs"][schema["$ref"].rsplit("/", 1)[-1]]
        assert "question" in schema["properties"] and schema["required"] == ["question"]


def _configurable_schema(schema: dict) -> dict:
    ref = schema["properties"]["configurable"].get("$ref") or schema["properties"]["configurable"]["allOf"][0]["$ref"]
    return schema["$defs"][ref.rsplit("/", 1)[-1]]


def test_config_schema_declares_the_run_options_with_bounds_and_public_limits(rag_server):
    from graph.options import QueryOptions

    base, app = rag_server
    with httpx.Client(timeout=30) as client:
        configurable = _configurable_schema(client.get(base + "/rag/config_schema").json())
    assert set(configurable["properties"]) == set(QueryOptions.model_fields)
    rerank_min = configurable["properties"]["rerank_min"]
    assert "abstains" in rerank_min["description"]
    max_chunks = configurable["properties"]["max_chunks"]
    settings = app.state.service.settings
    assert max_chunks["minimum"] == 1 and max_chunks["default"] == settings.max_chunks  # the server's value
    assert max_chunks["maximum"] == settings.public_max_chunks  # the public limit, not the option's own 1000


@pytest.mark.parametrize("name, value", [("max_chunks", 0), ("max_chunks", 13), ("temperature", 5),
                                         ("max_answer_tokens", 100_000), ("search_k", "lots")])
def test_an_option_out_of_bounds_gets_422_naming_the_field(rag_server, name, value):
    base, _ = rag_server
    with httpx.Client(timeout=30) as client:
        response = client.post(base + "/rag/invoke", json={
            "input": {"question": "Which fields?"}, "config": {"configurable": {name: value}}})
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["loc"][-2:] == ["configurable", name] and error["msg"]


def test_remote_runnable_sees_the_422_too(rag_server):
    base, _ = rag_server
    with pytest.raises(httpx.HTTPStatusError) as refused:
        RemoteRunnable(base + "/rag/", timeout=30).invoke(
            {"question": "Which fields?"}, config={"configurable": {"max_chunks": 0}})
    assert refused.value.response.status_code == 422
    assert "max_chunks" in refused.value.response.text


def test_batch_is_off_so_one_call_cannot_queue_many_runs(rag_server):
    base, _ = rag_server
    with httpx.Client(timeout=30) as client:
        response = client.post(base + "/rag/batch", json={"inputs": [{"question": "Which fields?"}] * 3})
    assert response.status_code == 404


def test_a_config_hash_route_is_bounded_too(rag_server):
    base, _ = rag_server
    import json

    from langserve.lzstring import LZString  # how the playground puts a config into the URL

    encoded = LZString.compressToEncodedURIComponent(json.dumps({"configurable": {"max_chunks": 0}}))
    with httpx.Client(timeout=30) as client:
        response = client.post(base + f"/rag/c/{encoded}/invoke", json={"input": {"question": "Which fields?"}})
    assert response.status_code == 422 and "max_chunks" in response.text
