"""Conversations and their event logs: what the stream endpoint replays and follows.

Every event a turn produces is appended to its conversation's log with the next id
(ids only grow, across all turns of a conversation), stored as its finished SSE frame
(bytes) so a replay or a follower costs no work. Log entries are plain `(id, frame)`
tuples, which the garbage collector stops tracking: hundreds of kept logs add nothing to
its pauses. A reader that reconnects with `Last-Event-ID` gets exactly the
events after that id. Logs are bounded: at most `max_events` per conversation (oldest
dropped), conversations idle longer than the time to live are evicted, and at most
`max_conversations` are kept (least recently active, finished ones first).

A `journal` (see `fieldguide.service.state`) makes the logs durable: readers see an event
only once the journal has committed it (`durable_id`), so whatever a reader was sent survives
a restart, and the registry is filled from it again when the service starts. Without one the
logs live in memory only.
"""
from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Callable


def sse_frame(event_id: int, name: str, data_json: str) -> bytes:
    """One Server-Sent Event as it goes on the wire (JSON data holds no line breaks)."""
    return f"id: {event_id}\r\nevent: {name}\r\ndata: {data_json}\r\n\r\n".encode()


INTERRUPTED_MESSAGE = ("The service restarted while this answer was being written, so it stopped here. "
                       "Please ask again.")
TURN_ENDS = ("done", "error")  # a turn's last event is one of these


def new_conversation_id() -> str:
    return secrets.token_hex(16)


class TurnSide:
    """This process's own side of a conversation, whatever holds its log: the task running its
    turn (if it runs here) and the readers attached here."""

    task: Any
    turn_active: bool
    cancel_reason: str | None
    listeners: int
    last_listened: float

    def cancel_turn(self, reason: str) -> None:
        """Cancel the running turn, if it runs here; its `error` event gives `reason`."""
        if self.turn_active and self.task is not None:
            self.cancel_reason = reason
            self.task.cancel()

    def listener_joined(self) -> None:
        self.listeners += 1
        self.last_listened = time.monotonic()

    def listener_left(self) -> None:
        self.listeners -= 1
        self.last_listened = time.monotonic()


@dataclass(eq=False)
class Conversation(TurnSide):
    id: str
    max_events: int
    events: deque = field(default_factory=deque)
    last_id: int = 0
    task: Any = None  # the running turn: a future whose cancel() stops it
    turn_active: bool = False  # a turn runs (set when it starts, cleared after its last event)
    turn_started_at_id: int = 0  # last event id before the running (or last) turn began
    listeners: int = 0
    last_listened: float = field(default_factory=time.monotonic)
    last_activity: float = field(default_factory=time.monotonic)
    evicted: bool = False
    cancel_reason: str | None = None
    reserved: bool = False  # a turn was accepted and is about to start
    # The loop its readers wait on. Turns append from another thread (see engine.py):
    # their appends wake the readers through that loop.
    loop: asyncio.AbstractEventLoop | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _wake_pending: bool = False
    journal: Any = None  # durable copy of the log (None: memory only)
    durable_id: int = 0  # readers see the events up to this one (all of them without a journal)

    @property
    def running(self) -> bool:
        return self.reserved or self.turn_active

    def reserve(self) -> bool:
        """Mark a turn as running before it starts, so readers wait for it and follow-ups get 409.
        False when a turn is running already."""
        if self.running:
            return False
        self.turn_started_at_id = self.last_id
        self.last_listened = time.monotonic()  # the abandonment clock starts now
        self.cancel_reason = None
        self.reserved = True
        if self.journal is not None:
            self.journal.set_running(self.id, True)
        return True

    def turn_ended(self) -> None:
        """The running turn wrote its last event (or never started): followers may finish."""
        self.reserved = False
        self.turn_active = False
        if self.journal is not None and not self.evicted:
            self.journal.set_running(self.id, False)
            self.journal.trim(self.id, self.last_id - self.max_events)
        self.wake()

    def append(self, name: str, data: dict[str, Any]) -> int:
        """Add an event (from any thread) and wake the readers. With a journal the event is
        stored before any reader can see it."""
        encoded = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            if self.evicted:
                return self.last_id
            event_id = self.last_id + 1
            frame = sse_frame(event_id, name, encoded)
            self.last_id = event_id
            self.events.append((event_id, frame))
            while len(self.events) > self.max_events:
                self.events.popleft()
            self.last_activity = time.monotonic()
            if self.journal is not None:  # visible once committed (`committed`, from the journal's thread)
                self.journal.append(self.id, event_id, frame, self.committed, ends_turn=name in TURN_ENDS)
                return event_id
            self.durable_id = event_id
        self.wake()
        return event_id

    def committed(self, event_id: int) -> None:
        """The journal has committed the events up to `event_id`: readers may have them."""
        with self._lock:
            if event_id <= self.durable_id:
                return
            self.durable_id = event_id
        self.wake()

    async def stream(self, cursor: int):
        """SSE frames after `cursor`, then new ones as they come, until the turn ends."""
        while not self.evicted:
            changed = self.changed()
            events = self.events_after(cursor)
            if events:  # everything that arrived since the last wake goes out in one write
                yield b"".join(frame for _, frame in events)
                cursor = events[-1][0]
            if not self.running and cursor >= self.last_id:
                return
            await changed.wait()

    def wake(self) -> None:
        """Wake the readers; from another thread, once per batch of appends."""
        loop = self.loop
        if loop is None or _running_loop() is loop:
            self._wake()
            return
        if self._wake_pending:
            return  # a wake is on its way and will find this event too
        self._wake_pending = True
        try:
            loop.call_soon_threadsafe(self._wake)
        except RuntimeError:  # the loop is closed: nobody is left to wake
            self._wake_pending = False

    def _wake(self) -> None:
        self._wake_pending = False
        self._changed.set()
        self._changed = asyncio.Event()

    def changed(self) -> asyncio.Event:
        """An event set at the next append (take it *before* reading, then wait on it)."""
        return self._changed

    def events_after(self, event_id: int) -> list[tuple[int, bytes]]:
        """(id, SSE frame) of every kept (and committed) event after `event_id`."""
        with self._lock:
            if not self.events or event_id >= self.durable_id:
                return []
            first = self.events[0][0]
            start = max(0, event_id + 1 - first)
            stop = len(self.events) - (self.last_id - self.durable_id)
            return [self.events[i] for i in range(start, stop)]

    def close(self) -> None:
        """Drop the log for good; readers still attached notice and end."""
        self.evicted = True
        with self._lock:
            self.events.clear()
        self.wake()

    def listener_left(self) -> None:
        super().listener_left()
        self.last_activity = self.last_listened

    def unheard_for(self, now: float) -> float:
        """Seconds since anyone was listening (0 while someone is)."""
        return 0.0 if self.listeners > 0 else now - self.last_listened


class ConversationLimitReached(Exception):
    """Every kept conversation is still running: nothing can be evicted to make room."""


class ConversationRegistry:
    """The conversations of one process, in memory, optionally backed by a durable journal."""

    def __init__(self, *, max_conversations: int, ttl_seconds: float, max_events: int,
                 on_evict: Callable[[str], None] | None = None, journal=None) -> None:
        self.max_conversations = max_conversations
        self.ttl_seconds = ttl_seconds
        self.max_events = max_events
        self.on_evict = on_evict
        self.journal = journal
        self._conversations: OrderedDict[str, Conversation] = OrderedDict()
        if journal is not None:
            self._restore()

    def _restore(self) -> None:
        """Fill the registry from the journal (least recently active first), dropping what
        expired while the service was down and ending turns a restart interrupted."""
        wall, now = time.time(), time.monotonic()
        for stored in self.journal.load(max_events=self.max_events):
            idle = max(0.0, wall - stored.last_activity)
            if idle > self.ttl_seconds and not stored.running:
                self._forget(stored.id)
                continue
            conversation = Conversation(id=stored.id, max_events=self.max_events, loop=_running_loop(),
                                        events=deque(stored.events), last_id=stored.last_id,
                                        durable_id=stored.last_id,
                                        turn_started_at_id=stored.last_id,
                                        last_activity=now - idle, last_listened=now - idle,
                                        journal=self.journal)
            self._conversations[conversation.id] = conversation
            if stored.running:
                if not stored.ended:  # the turn's last event never came: say why, once
                    conversation.append("error", {"message": INTERRUPTED_MESSAGE, "interrupted": True})
                conversation.turn_ended()
        while len(self._conversations) > self.max_conversations:
            self.evict(next(iter(self._conversations)))

    def _forget(self, conversation_id: str) -> None:
        if self.journal is not None:
            self.journal.delete(conversation_id)
        if self.on_evict is not None:
            self.on_evict(conversation_id)

    def __len__(self) -> int:
        return len(self._conversations)

    def __iter__(self):
        return iter(list(self._conversations.values()))

    def get(self, conversation_id: str) -> Conversation | None:
        return self._conversations.get(conversation_id)

    def touch(self, conversation: Conversation) -> None:
        conversation.last_activity = time.monotonic()
        if conversation.id in self._conversations:
            self._conversations.move_to_end(conversation.id)
        if self.journal is not None and not conversation.evicted:
            self.journal.touch(conversation.id)

    def create(self) -> Conversation:
        self.evict_expired()
        while len(self._conversations) >= self.max_conversations:
            victim = next((c for c in self._conversations.values() if not c.running), None)
            if victim is None:
                raise ConversationLimitReached(
                    f"{self.max_conversations} conversations are running; try again shortly")
            self.evict(victim.id)
        conversation = Conversation(id=new_conversation_id(), max_events=self.max_events, loop=_running_loop(),
                                    journal=self.journal)
        if self.journal is not None:
            self.journal.create(conversation.id)
        self._conversations[conversation.id] = conversation
        return conversation

    def evict(self, conversation_id: str) -> None:
        conversation = self._conversations.pop(conversation_id, None)
        if conversation is None:
            return
        conversation.cancel_turn("the conversation was evicted")
        conversation.close()
        self._forget(conversation_id)

    def evict_expired(self, now: float | None = None) -> int:
        now = time.monotonic() if now is None else now
        expired = [c.id for c in self._conversations.values()
                   if not c.running and c.listeners == 0 and now - c.last_activity > self.ttl_seconds]
        for conversation_id in expired:
            self.evict(conversation_id)
        return len(expired)

    def running_count(self) -> int:
        return sum(1 for c in self._conversations.values() if c.running)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
