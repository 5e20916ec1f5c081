"""Resume after dropped connections: no token lost, none repeated; 20 conversations at once."""
from __future__ import annotations

import asyncio

import httpx
import pytest

from fieldguide_testing.scripted_graph import DEFAULT_ANSWER, build_scripted_graph
from fieldguide_testing.serving import make_app, serve
from tests.service.sse import aiter_sse, iter_sse


def follow_with_drops(client, base, stream_url, drop_every):
    """Read the stream, hanging up after every `drop_every` events and resuming with Last-Event-ID."""
    received, last_id, reconnects = [], None, 0
    while True:
        headers = {"Last-Event-ID": last_id} if last_id else {}
        with client.stream("GET", base + stream_url, headers=headers) as response:
            assert response.status_code == 200
            count = 0
            for event in iter_sse(response):
                received.append(event)
                last_id = event.id
                count += 1
                if event.event in ("done", "error"):
                    return received, reconnects
                if count == drop_every:
                    break  # leaving the block closes the connection mid-stream
        reconnects += 1


@pytest.mark.parametrize("drop_every", [1, 3, 7, 20])
def test_resume_loses_and_repeats_nothing(slow_server, drop_every):
    with httpx.Client(timeout=30) as client:
        started = client.post(slow_server + "/conversations", json={"question": "Which fields?"}).json()
        events, reconnects = follow_with_drops(client, slow_server, started["stream_url"], drop_every)
    assert reconnects > 0
    ids = [int(e.id) for e in events]
    assert ids == list(range(1, len(ids) + 1))  # every id once, in order
    tokens = "".join(e.json["text"] for e in events if e.event == "token")
    assert events[-1].event == "done"
    assert tokens == events[-1].json["answer"] == DEFAULT_ANSWER


def test_resume_with_the_after_parameter_like_the_page_does(slow_server):
    with httpx.Client(timeout=30) as client:
        started = client.post(slow_server + "/conversations", json={"question": "Which fields?"}).json()
        with client.stream("GET", slow_server + started["stream_url"]) as response:
            first = []
            for event in iter_sse(response):
                first.append(event)
                if len(first) == 10:
                    break
        with client.stream("GET", slow_server + started["stream_url"] + "?after=" + first[-1].id) as response:
            rest = list(iter_sse(response))
    ids = [int(e.id) for e in first + rest]
    assert ids == list(range(1, len(ids) + 1))
    assert "".join(e.json["text"] for e in first + rest if e.event == "token") == DEFAULT_ANSWER


def test_twenty_simultaneous_conversations():
    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, answer="Answer for «{question}»: open the booking form.",
                                    token_delay=0.01)

    async def converse(client, base, n):
        question = f"question number {n}"
        started = (await client.post(base + "/conversations", json={"question": question})).json()
        async with client.stream("GET", base + started["stream_url"]) as response:
            events = [event async for event in aiter_sse(response)]
        return started["conversation_id"], question, events

    async def main(base):
        limits = httpx.Limits(max_connections=50)
        async with httpx.AsyncClient(timeout=60, limits=limits) as client:
            return await asyncio.gather(*(converse(client, base, n) for n in range(20)))

    with serve(make_app(factory)) as base:
        results = asyncio.run(main(base))
    assert len({conversation_id for conversation_id, _, _ in results}) == 20
    for _, question, events in results:
        assert events[-1].event == "done"
        expected = f"Answer for «{question}»: open the booking form."
        assert "".join(e.json["text"] for e in events if e.event == "token") == expected
        assert events[-1].json["answer"] == expected
        assert [int(e.id) for e in events] == list(range(1, len(events) + 1))
