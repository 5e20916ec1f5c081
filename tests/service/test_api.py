"""The HTTP contract of POST /conversations and GET /conversations/{id}/stream."""
from __future__ import annotations

import time

import httpx
import pytest

from fieldguide.errors import ModelUnavailable, StoreUnavailable
from fieldguide_testing.scripted_graph import DEFAULT_ANSWER, build_scripted_graph, split_tokens
from fieldguide_testing.serving import free_port, make_app
from tests.service.sse import iter_sse


def ask(client, base, question="Which fields does the booking form have?", **extra):
    response = client.post(base + "/conversations", json={"question": question, **extra})
    assert response.status_code == 202, response.text
    return response.json()


def read_stream(client, base, stream_url, headers=None, comments=None):
    with client.stream("GET", base + stream_url, headers=headers or {}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(iter_sse(response, comments))


def test_post_answers_202_with_an_id_and_a_stream_url(fast_server, client):
    started = ask(client, fast_server)
    assert set(started) == {"conversation_id", "stream_url"}
    assert started["stream_url"] == f"/conversations/{started['conversation_id']}/stream"


def test_stream_carries_status_sources_tokens_and_done_in_order(fast_server, client):
    started = ask(client, fast_server)
    events = read_stream(client, fast_server, started["stream_url"])
    names = [e.event for e in events]
    ids = [int(e.id) for e in events]
    assert ids == list(range(1, len(events) + 1))
    assert names[0] == "status" and names[-1] == "done"
    assert names.count("done") == 1 and "error" not in names
    stages = [e.json["stage"] for e in events if e.event == "status"]
    assert stages == ["started", "route", "search", "generate"]
    first_token = names.index("token")
    assert names.index("sources") == first_token - 1  # announced just before the answer
    tokens = [e.json["text"] for e in events if e.event == "token"]
    assert tokens == split_tokens(DEFAULT_ANSWER)
    done = events[-1].json
    assert set(done) == {"answer", "intent", "abstain", "coverage", "coverage_reason", "standalone_question",
                         "citations", "sentences", "timings_ms", "turn"}  # turn: what feedback names
    assert done["answer"] == "".join(tokens) == DEFAULT_ANSWER
    assert done["intent"] == "screen" and done["abstain"] is False
    # a graph with no coverage node: the verdict follows from `abstain`
    assert done["coverage"] == "covered" and done["coverage_reason"] == ""
    assert done["standalone_question"] == "Which fields does the booking form have?"
    assert "total" in done["timings_ms"] and done["timings_ms"]["first_token"] <= done["timings_ms"]["total"]


def test_the_coverage_verdict_reaches_the_sources_and_done_events_and_the_stored_turn(server_for, client):
    reason = "the docs never name Bitcoin"
    app = make_app(lambda checkpointer=None: build_scripted_graph(checkpointer, coverage=("partial", reason)))
    base = server_for(app)
    started = ask(client, base)
    events = read_stream(client, base, started["stream_url"])
    (sources,) = [e.json for e in events if e.event == "sources"]
    assert sources["coverage"] == "partial"  # known before the first token: the page marks the answer at once
    done = events[-1].json
    assert done["coverage"] == "partial" and done["coverage_reason"] == reason and done["abstain"] is False
    record = app.state.service.state.turns.turn(started["conversation_id"], 1)
    assert record.coverage == "partial" and record.coverage_reason == reason


def test_sources_carry_the_citation_numbers_and_done_the_citations_the_answer_uses(server_for, client):
    answer = "The form has the fields Boat and Skipper [1]."
    base = server_for(make_app(lambda checkpointer=None: build_scripted_graph(checkpointer, answer=answer)))
    events = read_stream(client, base, ask(client, base)["stream_url"])
    (sources,) = [e.json["sources"] for e in events if e.event == "sources"]
    assert [s["n"] for s in sources] == [1]
    assert sources[0]["url"] == "/docs-assets/screens/booking-form.md#L5-L12"
    done = events[-1].json
    assert done["citations"] == [{"n": 1, "chunk_id": "screens/booking-form.md#new-booking",
                                  "source": "screens/booking-form.md", "heading_path": ["Booking form", "**Fields** of the [form](booking-form.md) {#fields}"],
                                  "line_start": 5, "line_end": 12, "url": sources[0]["url"]}]
    assert client.get(base + sources[0]["url"].split("#")[0]).status_code == 200


def test_sources_give_breadcrumbs_and_resolved_image_urls(fast_server, client):
    started = ask(client, fast_server)
    events = read_stream(client, fast_server, started["stream_url"])
    (sources,) = [e.json["sources"] for e in events if e.event == "sources"]
    assert sources[0]["source"] == "screens/booking-form.md"
    assert sources[0]["heading_path"] == ["Booking form", "**Fields** of the [form](booking-form.md) {#fields}"]
    assert sources[0]["images"] == ["images/booking-form.svg"]
    assert sources[0]["image_urls"] == ["/docs-assets/screens/images/booking-form.svg"]
    image = client.get(fast_server + sources[0]["image_urls"][0])
    assert image.status_code == 200 and image.headers["content-type"].startswith("image/svg+xml")
    page = client.get(fast_server + sources[0]["link"])
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")


def test_docs_assets_stay_inside_the_docs_folder(fast_server, client):
    assert client.get(fast_server + "/docs-assets/../../pyproject.toml").status_code == 404
    assert client.get(fast_server + "/docs-assets/%2e%2e/%2e%2e/pyproject.toml").status_code == 404


def test_replay_of_a_finished_conversation_is_identical(fast_server, client):
    started = ask(client, fast_server)
    first = read_stream(client, fast_server, started["stream_url"])
    again = read_stream(client, fast_server, started["stream_url"])
    assert [(e.id, e.event, e.data) for e in again] == [(e.id, e.event, e.data) for e in first]


def test_last_event_id_replays_only_what_came_after(fast_server, client):
    started = ask(client, fast_server)
    events = read_stream(client, fast_server, started["stream_url"])
    rest = read_stream(client, fast_server, started["stream_url"], headers={"Last-Event-ID": "7"})
    assert [e.id for e in rest] == [e.id for e in events[7:]]


def test_unknown_conversation_is_404(fast_server, client):
    assert client.get(fast_server + "/conversations/nope/stream").status_code == 404
    response = client.post(fast_server + "/conversations", json={"question": "hi", "conversation_id": "nope"})
    assert response.status_code == 404


@pytest.mark.parametrize("body", [
    {"question": ""},
    {"question": "   \n\t "},
    {"question": "x" * 2001},
    {},
    {"question": 42},
    {"question": ["a list"]},
    {"question": "fine", "conversation_id": "../../etc"},
    {"question": "fine", "conversation_id": ""},
])
def test_invalid_questions_are_422(fast_server, client, body):
    response = client.post(fast_server + "/conversations", json=body)
    assert response.status_code == 422, response.text
    assert isinstance(response.json()["detail"], list)


@pytest.mark.parametrize("raw", [b"not json", b'{"question": ', b"[1, 2]", b'"just a string"'])
def test_malformed_bodies_are_422(fast_server, client, raw):
    response = client.post(fast_server + "/conversations", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 422


def test_a_question_at_the_limit_is_accepted(fast_server, client):
    ask(client, fast_server, question="x" * 2000)


def test_model_failure_is_an_error_event_and_the_server_stays_up(server_for, client):
    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, fail_with=ModelUnavailable("the chat model could not be loaded"),
                                    fail_if="explode")

    base = server_for(make_app(factory))
    started = ask(client, base, question="please explode")
    events = read_stream(client, base, started["stream_url"])
    assert events[-1].event == "error"
    assert events[-1].json == {"message": "The answer model is not available right now. Please try again in a moment."}
    assert "done" not in [e.event for e in events]
    assert client.get(base + "/healthz").status_code == 200
    after = read_stream(client, base, ask(client, base, question="a calm question")["stream_url"])
    assert after[-1].event == "done"


def test_unexpected_exception_names_its_type(server_for, client):
    base = server_for(make_app(lambda checkpointer=None: build_scripted_graph(
        checkpointer, fail_with=ZeroDivisionError("division by zero"))))
    events = read_stream(client, base, ask(client, base)["stream_url"])
    assert events[-1].event == "error"
    assert "ZeroDivisionError" in events[-1].json["message"]


def test_store_failure_tells_the_reader_in_plain_words_and_the_log_the_details(server_for, client, caplog):
    detail = "Cannot reach Weaviate at http://127.0.0.1:9 (gRPC port 9): connection refused."
    base = server_for(make_app(lambda checkpointer=None: build_scripted_graph(
        checkpointer, fail_with=StoreUnavailable(detail))))
    with caplog.at_level("WARNING", logger="fieldguide.service"):
        events = read_stream(client, base, ask(client, base)["stream_url"])
    message = events[-1].json["message"]
    assert events[-1].event == "error" and "not reachable right now" in message and "try again" in message
    assert "127.0.0.1" not in message and "gRPC" not in message
    assert detail in caplog.text


def test_a_raw_grpc_failure_is_not_shown_to_the_reader(server_for, client):
    from grpc import RpcError

    base = server_for(make_app(lambda checkpointer=None: build_scripted_graph(
        checkpointer, fail_with=RpcError("StatusCode.UNAVAILABLE ipv4:10.1.2.3:50051 connection refused"))))
    events = read_stream(client, base, ask(client, base)["stream_url"])
    assert events[-1].event == "error" and "10.1.2.3" not in events[-1].json["message"]


def test_healthz_and_readyz(server_for, client):
    base = server_for(make_app(readiness=lambda: None))
    assert client.get(base + "/healthz").json() == {"status": "ok"}
    ready = client.get(base + "/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}


def test_readyz_is_503_with_the_reason(server_for, client):
    base = server_for(make_app(readiness=lambda: "the index was built with another-model; run ingest --reindex"))
    response = client.get(base + "/readyz")
    assert response.status_code == 503
    assert "--reindex" in response.json()["reason"]


def test_readyz_is_503_when_weaviate_is_unreachable(server_for, client):
    from fieldguide.service import create_app
    from fieldguide_testing.serving import make_settings

    port = free_port()  # nothing listens there
    settings = make_settings(weaviate_url=f"http://127.0.0.1:{port}", weaviate_grpc_port=free_port())
    base = server_for(create_app(settings, build_scripted_graph))  # the default store probe
    response = client.get(base + "/readyz", timeout=60)
    assert response.status_code == 503
    assert "Weaviate" in response.json()["reason"]


def test_heartbeats_are_comment_lines(server_for, client):
    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, answer=" ".join(["word"] * 30), token_delay=0.02)

    base = server_for(make_app(factory, heartbeat_seconds=0.05))
    comments: list[str] = []
    events = read_stream(client, base, ask(client, base)["stream_url"], comments=comments)
    assert events[-1].event == "done"
    assert comments and all(c.startswith("ping") for c in comments)


def test_a_run_nobody_listens_to_is_cancelled(server_for, client, backend):
    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, answer=" ".join(["word"] * 400), token_delay=0.05)

    app = make_app(factory, abandon_after_seconds=0.3, **backend)
    base = server_for(app)
    started = ask(client, base)
    conversation = app.state.service.conversations.get(started["conversation_id"])
    deadline = time.monotonic() + 15
    while conversation.running:  # watch without listening
        assert time.monotonic() < deadline, "the unheard run was never cancelled"
        time.sleep(0.05)
    events = read_stream(client, base, started["stream_url"])
    assert events[-1].event == "error"
    assert "nobody listened" in events[-1].json["message"]
    assert len([e for e in events if e.event == "token"]) < 400  # it stopped early


def test_follow_up_keeps_the_history_and_streams_only_the_new_turn(server_for, client, backend):
    app = make_app(lambda checkpointer=None: build_scripted_graph(checkpointer, answer="About {question} ok."),
                   **backend)
    base = server_for(app)
    first = ask(client, base, question="first question")
    events_1 = read_stream(client, base, first["stream_url"])
    second = ask(client, base, question="second question", conversation_id=first["conversation_id"])
    assert second["conversation_id"] == first["conversation_id"]
    assert second["stream_url"].endswith(f"?after={events_1[-1].id}")
    events_2 = read_stream(client, base, second["stream_url"])
    assert int(events_2[0].id) == int(events_1[-1].id) + 1
    assert events_2[-1].event == "done" and events_2[-1].json["answer"] == "About second question ok."
    service = app.state.service
    state = service.graph.get_state({"configurable": {"thread_id": first["conversation_id"]}})
    assert state.values["questions"] == ["first question", "second question"]
    # only the newest checkpoint of the thread is kept between turns
    assert service.checkpointer.checkpoint_count(first["conversation_id"]) == 1


def test_follow_up_while_answering_is_409(server_for, client, backend):
    factory = lambda checkpointer=None: build_scripted_graph(checkpointer, answer=" ".join(["w"] * 200),
                                                             token_delay=0.02)
    base = server_for(make_app(factory, **backend))
    first = ask(client, base)
    response = client.post(base + "/conversations",
                           json={"question": "again", "conversation_id": first["conversation_id"]})
    assert response.status_code == 409
    assert read_stream(client, base, first["stream_url"])[-1].event == "done"


def test_old_conversations_are_evicted_with_their_checkpoints(server_for, client, backend):
    app = make_app(max_conversations=3, **backend)
    base = server_for(app)
    ids = []
    for n in range(5):
        started = ask(client, base, question=f"question {n}")
        read_stream(client, base, started["stream_url"])
        ids.append(started["conversation_id"])
    for evicted in ids[:2]:
        assert client.get(base + f"/conversations/{evicted}/stream").status_code == 404
    for kept in ids[2:]:
        assert client.get(base + f"/conversations/{kept}/stream").status_code == 200
    saver = app.state.service.checkpointer
    assert saver.thread_ids() == set(ids[2:])
    assert all(saver.checkpoint_count(evicted) == 0 for evicted in ids[:2])


def test_conversations_expire_after_their_time_to_live(server_for, client, backend):
    app = make_app(event_log_ttl_seconds=0.2, **backend)
    base = server_for(app)
    started = ask(client, base)
    read_stream(client, base, started["stream_url"])
    deadline = time.monotonic() + 10
    while app.state.service.conversations.get(started["conversation_id"]) is not None:  # (reading would renew it)
        assert time.monotonic() < deadline, "the conversation never expired"
        time.sleep(0.05)
    assert client.get(base + started["stream_url"]).status_code == 404
    assert started["conversation_id"] not in app.state.service.checkpointer.thread_ids()


def test_event_log_keeps_at_most_max_events(server_for, client, backend):
    base = server_for(make_app(max_events_per_conversation=10, **backend))
    started = ask(client, base)
    read_stream(client, base, started["stream_url"])
    replay = read_stream(client, base, started["stream_url"])
    assert len(replay) == 10 and replay[-1].event == "done"
    ids = [int(e.id) for e in replay]
    assert ids == list(range(ids[0], ids[0] + 10))


def test_chat_page_is_served_with_a_strict_policy(fast_server, client):
    page = client.get(fast_server + "/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("style-src")[0]
    assert '<textarea id="question"' in page.text
    assert client.get(fast_server + "/static/app.js").status_code == 200
    assert client.get(fast_server + "/static/../settings.py").status_code == 404


def test_a_turn_that_holds_its_thread_does_not_hold_the_api(server_for, client):
    """Turns run on their own thread and event loop: while one holds its loop (an async node
    doing blocking work, as CPU-bound steps do), another POST is answered, and the held turn
    then finishes normally."""
    import threading

    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict, total=False):
        question: str
        conversation_id: str
        answer: str

    release = threading.Event()
    entered = threading.Event()

    async def blocking(state: State) -> dict:  # async: it runs on the turn's loop, and holds it
        entered.set()
        assert release.wait(20), "the test never released the turn"
        return {"answer": "released"}

    def factory(checkpointer=None):
        builder = StateGraph(State)
        builder.add_node("blocking", blocking)
        builder.add_edge(START, "blocking")
        builder.add_edge("blocking", END)
        return builder.compile(checkpointer=checkpointer)

    base = server_for(make_app(factory))
    stuck = ask(client, base, "first")
    assert entered.wait(10), "the first turn never started"
    try:
        second = client.post(base + "/conversations", json={"question": "second"}, timeout=5)
        assert second.status_code == 202
        assert client.get(base + "/healthz", timeout=5).status_code == 200
    finally:
        release.set()
    events = read_stream(client, base, stuck["stream_url"])
    assert events[-1].event == "done" and events[-1].json["answer"] == "released"
