"""Restarts lose nothing: a real service process is killed in the middle of an answer and started
again on the same state; the reader resumes with Last-Event-ID, the interrupted turn ends with an
error event, and the conversation's follow-up still knows its history."""
from __future__ import annotations

import httpx
import pytest

from fieldguide_testing.scripted_server import ServiceProcess, scripted_answer
from tests.service.sse import read_events

WORDS = 300
TOKEN_DELAY = 0.01  # 3 s an answer: time to kill it halfway
SAVE_DELAY = 0.3  # each checkpoint save spans many loop turns, so a shutdown that cuts one short shows


def check_resumed(before, after, turn):
    """`after` continues `before` exactly: ids follow on, and the last turn's tokens are a prefix of
    its answer."""
    ids = [int(e.id) for e in before + after]
    assert ids == list(range(1, len(ids) + 1)), "an event was lost or repeated"
    events = before + after
    last_start = max(i for i, e in enumerate(events) if e.event == "status" and e.json["stage"] == "started")
    tokens = "".join(e.json["text"] for e in events[last_start:] if e.event == "token")
    assert tokens and scripted_answer(WORDS).replace("{turn}", str(turn)).startswith(tokens)
    return tokens


@pytest.fixture
def sqlite_env(tmp_path):
    return {"FIELDGUIDE_STATE_URL": f"sqlite:///{tmp_path}/state.sqlite", "FIELDGUIDE_DATA_DIR": str(tmp_path)}


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_a_restart_mid_answer_loses_and_repeats_nothing(sqlite_env, tmp_path, how):
    service = ServiceProcess(sqlite_env, args=["--token-delay", str(TOKEN_DELAY), "--words", str(WORDS),
                                               "--save-delay", str(SAVE_DELAY)],
                             log_path=str(tmp_path / "service.log"))
    with httpx.Client(timeout=30) as client:
        service.start()
        try:
            first = client.post(service.base + "/conversations", json={"question": "first"}).json()
            answered = read_events(client, service.base + first["stream_url"])
            assert answered[-1].event == "done"
            started = client.post(service.base + "/conversations",
                                  json={"question": "second", "conversation_id": first["conversation_id"]}).json()
            before = read_events(client, service.base + started["stream_url"], stop_after=40)
            assert [e.event for e in before].count("token") > 20
            getattr(service, how)()  # SIGKILL (a crash) or SIGTERM (a deploy)
            service.start()
            after = read_events(client, service.base + started["stream_url"],
                                headers={"Last-Event-ID": before[-1].id})
            check_resumed(answered + before, after, turn=2)
            assert after[-1].event == "error"
            message = after[-1].json["message"]
            assert "ask again" in message if how == "kill" else "shutting down" in message
            assert [e.event for e in after].count("error") == 1 and "done" not in [e.event for e in after]

            # the follow-up goes on with the conversation's history: the answered first question,
            # and the interrupted one when the service had time to save how far it got (SIGTERM)
            follow_up = client.post(service.base + "/conversations",
                                    json={"question": "third", "conversation_id": first["conversation_id"]})
            assert follow_up.status_code == 202
            events = read_events(client, service.base + follow_up.json()["stream_url"])
            assert int(events[0].id) == int(after[-1].id) + 1
            assert events[-1].event == "done"
            assert events[-1].json["answer"].startswith("Turn 2: " if how == "kill" else "Turn 3: ")
        finally:
            service.stop()


def test_a_finished_conversation_replays_identically_after_a_restart(sqlite_env):
    service = ServiceProcess(sqlite_env, args=["--words", "30"])
    with httpx.Client(timeout=30) as client:
        service.start()
        try:
            started = client.post(service.base + "/conversations", json={"question": "q"}).json()
            original = read_events(client, service.base + started["stream_url"])
            service.kill()
            service.start()
            replay = read_events(client, service.base + started["stream_url"])
            assert [(e.id, e.event, e.data) for e in replay] == [(e.id, e.event, e.data) for e in original]
            assert client.get(service.base + "/conversations/unknown/stream").status_code == 404
        finally:
            service.stop()


def test_a_second_service_on_the_same_sqlite_file_is_refused(sqlite_env):
    first = ServiceProcess(sqlite_env)
    with first:
        second = ServiceProcess(sqlite_env)
        with pytest.raises(RuntimeError, match="exited"):
            second.start(timeout=30)


def test_a_turn_whose_last_event_was_stored_is_not_ended_again(tmp_path):
    """A process killed between a turn's `done` reaching the log and the turn being marked as
    ended: after the restart the log is as it was, with no `error` after the `done`; a turn cut
    off before its last event gets exactly one."""
    from fieldguide.service.state import open_state
    from fieldguide_testing.serving import make_settings

    settings = make_settings(state_url=f"sqlite:///{tmp_path}/state.sqlite")
    state = open_state(settings)
    finished, cut_off = state.conversations.create(), state.conversations.create()
    for conversation in (finished, cut_off):
        assert conversation.reserve()
        conversation.append("status", {"stage": "started"})
        conversation.append("token", {"text": "Hello"})
    finished.append("done", {"answer": "Hello"})
    state.close()  # neither turn_ended() ran: the journal still says both are running

    again = open_state(settings)
    try:
        kept = again.conversations.get(finished.id)
        assert [frame for _, frame in kept.events] == [frame for _, frame in finished.events]
        assert not kept.running
        ended = again.conversations.get(cut_off.id)
        assert [frame.split(b"\r\n")[1] for _, frame in ended.events] == [
            b"event: status", b"event: token", b"event: error"]
        assert not ended.running
    finally:
        again.close()

    third = open_state(settings)  # and what the restart wrote is kept: no second error either time
    try:
        assert len(third.conversations.get(cut_off.id).events) == 3
        assert len(third.conversations.get(finished.id).events) == 3
        assert third.conversations.get(finished.id).reserve()  # a follow-up can start
    finally:
        third.close()
