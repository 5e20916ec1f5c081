"""POST /conversations/{id}/feedback (the contract in docs/guide.md) on every state backend, and what
`fieldguide gaps` then reads from the same store."""
from __future__ import annotations

import json
import time

import httpx

from fieldguide.gaps import problem_turns
from fieldguide_testing.scripted_graph import build_scripted_graph
from fieldguide_testing.serving import make_app, serve
from tests.service.sse import read_stream_events as read


def test_feedback_is_stored_with_the_turn_it_rates(backend):
    app = make_app(lambda checkpointer=None: build_scripted_graph(checkpointer, answer="About {question}."), **backend)
    turns = app.state.service.state.turns
    began = time.time()
    with serve(app) as base, httpx.Client(timeout=30) as client:
        started = client.post(base + "/conversations", json={"question": "Which fields?"}).json()
        events = read(client, base, started["stream_url"])
        done = [e for e in events if e.event == "done"][-1]
        assert json.loads(done.data)["turn"] == 1  # the number the page sends back with a vote
        cid = started["conversation_id"]
        url = f"{base}/conversations/{cid}/feedback"

        response = client.post(url, json={"turn": 1, "rating": "down", "comment": "  it missed the Skipper field "})
        assert response.status_code == 204 and response.content == b""
        assert client.post(url, json={"turn": 1, "rating": "up"}).status_code == 204  # a change of mind

        (first, second) = [f for f in turns.feedback_since(began) if f.conversation_id == cid]
        assert (first.rating, first.comment, second.rating, second.comment) == (
            "down", "it missed the Skipper field", "up", "")
        record = first.record
        assert record.question == "Which fields?" and record.answer == "About Which fields?."
        assert record.sections and all({"chunk_id", "source", "heading_path", "digest"} <= set(s)
                                       for s in record.sections)

        # the newest vote counts: "up" wins, so gaps has nothing to report on this turn
        assert problem_turns(turns.turns_since(began), turns.feedback_since(0)).problems == []


def test_bad_feedback_is_refused_and_nothing_is_stored(backend):
    app = make_app(lambda checkpointer=None: build_scripted_graph(checkpointer), **backend)
    turns = app.state.service.state.turns
    began = time.time()
    with serve(app) as base, httpx.Client(timeout=30) as client:
        started = client.post(base + "/conversations", json={"question": "Which fields?"}).json()
        read(client, base, started["stream_url"])
        url = f"{base}/conversations/{started['conversation_id']}/feedback"
        unknown = client.post(f"{base}/conversations/no-such-conversation/feedback", json={"turn": 1, "rating": "up"})
        assert unknown.status_code == 404 and "unknown conversation" in unknown.json()["detail"]
        assert client.post(url, json={"turn": 2, "rating": "up"}).status_code == 404  # no such turn (yet)
        for body in ({"turn": 1, "rating": "meh"}, {"turn": 0, "rating": "up"}, {"turn": "one", "rating": "up"},
                     {"rating": "up"}, {"turn": 1}, {"turn": 1, "rating": "up", "comment": "x" * 2001},
                     {"turn": 1, "rating": "up", "stars": 5}, [1, "up"]):
            response = client.post(url, json=body)
            assert response.status_code == 422, (body, response.status_code)
        assert client.post(url, content=b"{not json", headers={"Content-Type": "application/json"}).status_code == 422
        assert list(turns.feedback_since(began)) == []
