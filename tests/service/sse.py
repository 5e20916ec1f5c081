"""A small Server-Sent Events reader for tests: parses an httpx streaming response."""
from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class Sse:
    event: str
    data: str
    id: str | None

    @property
    def json(self):
        return json.loads(self.data)


@dataclass
class SseParser:
    """Feeds lines one at a time; returns an event when a blank line completes one."""

    comments: list[str] | None = None
    event: str = "message"
    data: list[str] = field(default_factory=list)
    event_id: str | None = None

    def feed(self, line: str) -> Sse | None:
        if line == "":
            done = Sse(self.event, "\n".join(self.data), self.event_id) if self.data else None
            self.event, self.data, self.event_id = "message", [], None
            return done
        if line.startswith(":"):
            if self.comments is not None:
                self.comments.append(line[1:].strip())
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self.event = value
        elif name == "data":
            self.data.append(value)
        elif name == "id":
            self.event_id = value
        return None


def iter_sse(response, comments: list[str] | None = None):
    """Yield events from `response.iter_lines()`; comment lines (heartbeats) go to `comments`."""
    parser = SseParser(comments)
    for line in response.iter_lines():
        event = parser.feed(line)
        if event is not None:
            yield event


async def aiter_sse(response):
    parser = SseParser()
    async for line in response.aiter_lines():
        event = parser.feed(line)
        if event is not None:
            yield event


def read_events(client, url, headers=None, stop_after=None):
    """Every event of a stream (an httpx Client), or the first `stop_after` (then it hangs up)."""
    events = []
    with client.stream("GET", url, headers=headers or {}) as response:
        assert response.status_code == 200, response.read()
        for event in iter_sse(response):
            events.append(event)
            if stop_after is not None and len(events) >= stop_after:
                break
    return events


def read_stream_events(client, base: str, url: str) -> list[Sse]:
    """Every event of the stream at `base + url`, read to its end."""
    with client.stream("GET", base + url) as response:
        return list(iter_sse(response))
