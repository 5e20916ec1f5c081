"""What every state backend opens: the conversations, the checkpointer, the turns, the outbox.

A module of its own, below the package and every backend, so that a backend (`redis.py`)
builds one without importing the package that chooses among the backends.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from fieldguide.service.state.outbox import MemoryOutbox
from fieldguide.service.state.records import TurnStore


@dataclass
class ServiceState:
    url: str
    conversations: Any  # ConversationRegistry or RedisConversationRegistry
    checkpointer: Any  # a LangGraph saver with trim_thread, delete_thread, sweep
    turns: TurnStore
    probes: list[Callable[[], "str | None"]] = field(default_factory=list)  # each: None, or why not ready
    closers: list[Callable[[], None]] = field(default_factory=list)
    housekeeping: list[Callable[[], None]] = field(default_factory=list)  # run now and then by the janitor
    shared: bool = False  # several processes see the same conversations
    outbox: Any = field(default_factory=MemoryOutbox)  # handoffs waiting for delivery (outbox.Outbox)

    def ready(self) -> str | None:
        for probe in self.probes:
            reason = probe()
            if reason:
                return reason
        return None

    def tidy(self) -> None:
        for job in self.housekeeping:
            job()

    def close(self) -> None:
        for close in reversed(self.closers):
            close()
