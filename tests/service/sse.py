"""A small Server-Sent Events reader for tests: parses an httpx streaming response."""
from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass
class Sse:
    event: str
    data: str
    id: str | None

    @property
    def json(self):
        return json.loads(self.data)


def iter_sse(response, comments: list[str] | None = None):
    """Yield events from `response.iter_lines()`; comment lines (heartbeats) go to `comments`."""
    event, data, event_id = "message", [], None
    for line in response.iter_lines():
        if line == "":
            if data:
                yield Sse(event, "\n".join(data), event_id)
            event, data, event_id = "message", [], None
            continue
        if line.startswith(":"):
            if comments is not None:
                comments.append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            event_id = value


async def aiter_sse(response):
    event, data, event_id = "message", [], None
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield Sse(event, "\n".join(data), event_id)
            event, data, event_id = "message", [], None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            event_id = value
