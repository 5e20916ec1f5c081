"""Stored turns and feedback, the interface the docs loop builds on: the same on every backend."""
from __future__ import annotations

import time

import httpx
import pytest

from fieldguide.service.state import open_state
from fieldguide_testing.scripted_graph import build_scripted_graph
from fieldguide_testing.serving import make_app, make_settings, serve
from tests.service.sse import read_stream_events as read


def test_each_turn_is_stored_from_its_final_state(backend):
    app = make_app(lambda checkpointer=None: build_scripted_graph(checkpointer, answer="About {question}."), **backend)
    turns = app.state.service.state.turns
    began = time.time()
    with serve(app) as base, httpx.Client(timeout=30) as client:
        first = client.post(base + "/conversations", json={"question": "Which fields?"}).json()
        read(client, base, first["stream_url"])
        second = client.post(base + "/conversations",
                             json={"question": "And the form?", "conversation_id": first["conversation_id"]}).json()
        read(client, base, second["stream_url"])
        cid = first["conversation_id"]
        records = turns.turns(cid)
        assert [(r.turn, r.question, r.status, r.answer) for r in records] == [
            (1, "Which fields?", "done", "About Which fields?."), (2, "And the form?", "done", "About And the form?.")]
        assert records[1].intent == "screen" and records[1].abstain is False
        assert records[1].timings_ms["generate"] >= 0 and records[1].finished_at >= records[1].started_at >= began
        assert [r.question for r in turns.turns_since(began)][-2:] == ["Which fields?", "And the form?"]
        assert turns.turn(cid, 3) is None and turns.turns("no-such-conversation") == []

        feedback = turns.add_feedback(cid, 2, "down", "it missed the Skipper field")
        assert feedback.record.answer == "About And the form?." and feedback.rating == "down"
        assert turns.add_feedback(cid, 7, "up") is None  # no such turn
        with pytest.raises(ValueError):
            turns.add_feedback(cid, 1, "meh")
        stored = [f for f in turns.feedback_since(began) if f.conversation_id == cid]
        assert [(f.turn, f.rating, f.comment) for f in stored] == [(2, "down", "it missed the Skipper field")]


def test_a_reader_that_read_a_turn_to_its_end_finds_it_stored(backend):
    app = make_app(lambda checkpointer=None: build_scripted_graph(checkpointer, answer="About {question}."), **backend)
    turns = app.state.service.state.turns
    finish = turns.finish

    def slow_finish(record):  # a store that takes a while to answer
        time.sleep(0.3)
        return finish(record)

    turns.finish = slow_finish
    with serve(app) as base, httpx.Client(timeout=30) as client:
        asked = client.post(base + "/conversations", json={"question": "Which fields?"}).json()
        read(client, base, asked["stream_url"])
        [record] = turns.turns(asked["conversation_id"])
        assert (record.status, record.answer) == ("done", "About Which fields?.")


def test_a_failed_turn_is_stored_with_its_error(backend):
    from fieldguide.errors import StoreUnavailable

    app = make_app(lambda checkpointer=None: build_scripted_graph(checkpointer, fail_with=StoreUnavailable("x")),
                   **backend)
    with serve(app) as base, httpx.Client(timeout=30) as client:
        started = client.post(base + "/conversations", json={"question": "q"}).json()
        read(client, base, started["stream_url"])
        (record,) = app.state.service.state.turns.turns(started["conversation_id"])
        assert record.status == "error" and "not reachable" in record.error and record.answer is None


def test_turns_survive_a_restart_and_an_interrupted_one_is_marked(tmp_path):
    settings = make_settings(state_url=f"sqlite:///{tmp_path}/state.sqlite")
    state = open_state(settings)
    record = state.turns.start("c1", "cut off by the restart")
    done = state.turns.start("c1", "second")
    state.turns.finish(done.finish("done", {"answer": "yes", "citations": [{"n": 1, "chunk_id": "a"}]}))
    state.turns.add_feedback("c1", 2, "up")
    state.close()  # (a crash leaves the same: the running turn's record says "running")

    again = open_state(settings)
    try:
        first, second = again.turns.turns("c1")
        assert (first.turn, first.status) == (record.turn, "interrupted")
        assert second.answer == "yes" and second.citations == [{"n": 1, "chunk_id": "a"}]
        assert [f.rating for f in again.turns.feedback_since(0)] == ["up"]
    finally:
        again.close()


def finished_turns(turns, conversation_id: str, timeout: float = 10.0):
    """The conversation's records once none is running: a record is completed just after the
    stream's `done` event, so a reader that has seen `done` may still find it running."""
    deadline = time.monotonic() + timeout
    while True:
        records = turns.turns(conversation_id)
        if records and all(r.status != "running" for r in records) or time.monotonic() > deadline:
            return records
        time.sleep(0.02)


@pytest.mark.models
def test_a_finished_turn_stores_its_question_vector_for_gaps(backend, embeddings):
    """The vector the graph searched with is stored with the turn, named by its vector space, and
    `fieldguide gaps` then clusters the stored question without embedding it again."""
    from fieldguide.embedding import question_vector_space
    from fieldguide.gaps import build_report, problem_turns

    def graph(checkpointer=None):  # abstains (no context), so the turn is one gaps reports
        return build_scripted_graph(checkpointer, context=[], embed=embeddings.embed_query)

    app = make_app(graph, **backend)
    turns = app.state.service.state.turns
    began = time.time()
    question = "Can I pay my staff their wages from the app?"
    with serve(app) as base, httpx.Client(timeout=30) as client:  # the state is open while it serves
        started = client.post(base + "/conversations", json={"question": question}).json()
        read(client, base, started["stream_url"])
        (record,) = finished_turns(turns, started["conversation_id"])
        summary = problem_turns(turns.turns_since(began), turns.feedback_since(began), began)
    space = question_vector_space(app.state.service.settings)
    assert record.status == "done" and record.abstain is True
    assert record.question_vector["model"] == space
    stored = record.question_vector["vector"]
    expected = embeddings.embed_query(question)
    assert len(stored) == len(expected) and max(abs(a - b) for a, b in zip(stored, expected)) < 1e-6

    asked = []

    def embed(texts):
        asked.extend(texts)
        return embeddings.embed_documents(texts)

    report = build_report(summary, embed, None, threshold=0.5, model=space)
    assert report.embedded == 0 and question not in asked
    assert [c.wordings for c in report.clusters] == [[question]]


def test_a_turn_without_a_vector_is_stored_without_one(tmp_path):
    """A graph with no embed step (or a turn that failed before it) leaves the field empty: gaps
    then embeds that wording itself."""
    app = make_app(lambda checkpointer=None: build_scripted_graph(checkpointer),
                   state_url=f"sqlite:///{tmp_path}/state.sqlite")
    with serve(app) as base, httpx.Client(timeout=30) as client:
        started = client.post(base + "/conversations", json={"question": "Which fields?"}).json()
        read(client, base, started["stream_url"])
        (record,) = finished_turns(app.state.service.state.turns, started["conversation_id"])
    assert record.status == "done" and record.question_vector is None
