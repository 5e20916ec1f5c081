"""Two service processes share Redis (and Postgres for checkpoints): submit on one, stream and
resume from the other, send the follow-up to either; a replica that dies mid-answer leaves a turn
that the other ends with an error event, and the reader loses and repeats nothing."""
from __future__ import annotations

import time

import httpx
import pytest

from fieldguide_testing.scripted_server import ServiceProcess, scripted_answer
from tests.service.conftest import fresh_database, fresh_redis
from tests.service.sse import read_events

WORDS = 150


@pytest.fixture
def replicas(redis_server, postgres_server, tmp_path):
    env = {"FIELDGUIDE_STATE_URL": fresh_redis(redis_server),
           "FIELDGUIDE_CHECKPOINT_URL": fresh_database(postgres_server), "FIELDGUIDE_DATA_DIR": str(tmp_path)}
    args = ["--token-delay", "0.01", "--words", str(WORDS)]
    pair = [ServiceProcess(env, args=args, log_path=str(tmp_path / f"replica-{n}.log")) for n in (1, 2)]
    try:
        for replica in pair:
            replica.start()
        yield pair
    finally:
        for replica in pair:
            replica.stop()


def test_submit_on_one_stream_and_resume_from_the_other_follow_up_to_either(replicas):
    a, b = replicas
    with httpx.Client(timeout=30) as client:
        started = client.post(a.base + "/conversations", json={"question": "first"}).json()
        head = read_events(client, b.base + started["stream_url"], stop_after=25)  # from the other replica
        tail = read_events(client, a.base + started["stream_url"], headers={"Last-Event-ID": head[-1].id})
        events = head + tail
        assert [int(e.id) for e in events] == list(range(1, len(events) + 1))
        assert events[-1].event == "done"
        answer = "".join(e.json["text"] for e in events if e.event == "token")
        assert answer == events[-1].json["answer"] == scripted_answer(WORDS).replace("{turn}", "1")

        cid = started["conversation_id"]
        for n, replica in enumerate([b, a, b], start=2):  # follow-ups alternate between the replicas
            follow_up = client.post(replica.base + "/conversations", json={"question": f"q{n}", "conversation_id": cid})
            assert follow_up.status_code == 202
            other = a if replica is b else b
            busy = client.post(other.base + "/conversations", json={"question": "now", "conversation_id": cid})
            assert busy.status_code == 409  # a turn runs, wherever it was submitted
            turn = read_events(client, other.base + follow_up.json()["stream_url"])
            assert turn[-1].event == "done"
            assert turn[-1].json["answer"].startswith(f"Turn {n}: ")  # the history travelled with it
        assert client.get(a.base + "/conversations/nope/stream").status_code == 404
        assert client.get(b.base + "/readyz").status_code == 200


def test_a_replica_killed_mid_answer_leaves_an_error_event_not_a_hang(replicas):
    a, b = replicas
    with httpx.Client(timeout=30) as client:
        started = client.post(a.base + "/conversations", json={"question": "first"}).json()
        head = read_events(client, b.base + started["stream_url"], stop_after=30)
        a.kill()
        began = time.monotonic()
        tail = read_events(client, b.base + started["stream_url"], headers={"Last-Event-ID": head[-1].id})
        waited = time.monotonic() - began
        events = head + tail
        assert [int(e.id) for e in events] == list(range(1, len(events) + 1))
        assert events[-1].event == "error" and "ask again" in events[-1].json["message"]
        assert waited < 15
        tokens = "".join(e.json["text"] for e in events if e.event == "token")
        assert scripted_answer(WORDS).replace("{turn}", "1").startswith(tokens)
        # the survivor answers the follow-up; the interrupted turn is not part of the history
        follow_up = client.post(b.base + "/conversations",
                                json={"question": "again", "conversation_id": started["conversation_id"]})
        assert follow_up.status_code == 202
        turn = read_events(client, b.base + follow_up.json()["stream_url"])
        assert turn[-1].event == "done" and turn[-1].json["answer"].startswith("Turn 1: ")
