"""Conversation state behind one setting, `FIELDGUIDE_STATE_URL`: a backend per URL scheme.

Each backend holds the same three things, bounded the same way (time to live and
`max_events_per_conversation` per log, `max_conversations` kept, the newest checkpoint per
thread):

* the event logs the stream endpoint replays (`conversations`: a registry of conversations);
* the LangGraph checkpointer that carries a conversation's history into its follow-ups;
* the turns (question, answer, citations, ...) and their feedback (`turns`: a `TurnStore`);
* the handoff outbox: support requests waiting to be delivered (`outbox`: see outbox.py).

The backends:

* `sqlite:///PATH`, the default (`<data_dir>/state/conversations-<collection>.sqlite`): the logs
  in memory, written through to the file; LangGraph's `SqliteSaver` and the turns in the same file;
* `redis://HOST:PORT/DB`, for several replicas: the logs as Redis Streams, the turns in Redis,
  LangGraph's `PostgresSaver` at `FIELDGUIDE_CHECKPOINT_URL`;
* `memory://`: everything in memory (a bounded `InMemorySaver`); nothing survives a restart.
"""
from __future__ import annotations

import re

from fieldguide.errors import FieldguideError
from fieldguide.service.state.records import FeedbackRecord, MemoryTurnStore, TurnRecord, TurnStore
from fieldguide.service.state.service_state import ServiceState

__all__ = ["ServiceState", "open_state", "open_turns", "state_url", "TurnRecord", "FeedbackRecord", "TurnStore"]


def state_url(settings) -> str:
    """The configured state URL, or the default: a SQLite file under the data dir, one per
    collection (so services of different collections on one machine each own theirs)."""
    if settings.state_url:
        return settings.state_url.strip()
    name = re.sub(r"[^A-Za-z0-9_]", "_", settings.collection) or "default"
    path = (settings.data_dir / "state" / f"conversations-{name}.sqlite").expanduser().resolve()
    return f"sqlite:///{path}"


def open_state(settings) -> ServiceState:
    url = state_url(settings)
    scheme = url.split(":", 1)[0].lower()
    if scheme == "memory":
        return _memory_state(settings, url)
    if scheme == "sqlite":
        return _sqlite_state(settings, url)
    if scheme in ("redis", "rediss"):
        from fieldguide.service.state.redis import open_redis_state

        return open_redis_state(settings, url)
    raise FieldguideError(f"FIELDGUIDE_STATE_URL={url!r}: use sqlite:///PATH, redis://HOST:PORT/DB or memory://")


def open_turns(settings) -> TurnStore:
    """Only the stored turns and feedback of the configured state (for `fieldguide gaps`): no
    event logs or checkpoints are opened. A SQLite file that does not exist yet is an empty
    store (nothing is created); `memory://` state lives in the service's process, so another
    process sees it empty. Close it with `.close()` when it has one."""
    url = state_url(settings)
    scheme = url.split(":", 1)[0].lower()
    if scheme == "memory":
        return MemoryTurnStore()
    if scheme == "sqlite":
        from fieldguide.service.state.sqlite import SqliteState, sqlite_path

        path = sqlite_path(url)
        if not path.exists():
            return MemoryTurnStore()
        return SqliteState(path, turn_retention_days=settings.turn_retention_days)
    if scheme in ("redis", "rediss"):
        from fieldguide.service.state.redis import RedisConversationRegistry, RedisTurnStore

        registry = RedisConversationRegistry(
            url, max_conversations=settings.max_conversations, ttl_seconds=settings.event_log_ttl_seconds,
            max_events=settings.max_events_per_conversation, timeout=settings.dependency_timeout_seconds)
        turns = RedisTurnStore(registry, settings.turn_retention_days)
        turns.close = registry.close
        return turns
    raise FieldguideError(f"FIELDGUIDE_STATE_URL={url!r}: use sqlite:///PATH, redis://HOST:PORT/DB or memory://")


def _registry(settings, checkpointer, journal=None):
    from fieldguide.service.conversations import ConversationRegistry

    return ConversationRegistry(max_conversations=settings.max_conversations,
                                ttl_seconds=settings.event_log_ttl_seconds,
                                max_events=settings.max_events_per_conversation,
                                on_evict=checkpointer.delete_thread, journal=journal)


def _memory_state(settings, url: str) -> ServiceState:
    from fieldguide.service.checkpoint import BoundedMemorySaver

    checkpointer = BoundedMemorySaver(max_threads=max(16, settings.max_conversations * 2))
    return ServiceState(url, _registry(settings, checkpointer), checkpointer, MemoryTurnStore())


def _sqlite_state(settings, url: str) -> ServiceState:
    from fieldguide.service.state.sqlite import SqliteCheckpointer, SqliteState, sqlite_path

    from fieldguide.service.state.outbox import SqliteOutbox

    path = sqlite_path(url)
    store = SqliteState(path, turn_retention_days=settings.turn_retention_days)
    try:
        checkpointer = SqliteCheckpointer(path)
        registry = _registry(settings, checkpointer, journal=store)
        outbox = SqliteOutbox(path)
    except BaseException:
        store.close()
        raise
    store.expire_records()
    ttl = settings.event_log_ttl_seconds

    def forget_unowned_threads() -> None:  # LangServe's threads, and any a crash left behind
        checkpointer.sweep(ttl, keep={c.id for c in registry})

    return ServiceState(url, registry, checkpointer, store, probes=[store.ready],
                        closers=[store.close, checkpointer.close, outbox.close],
                        housekeeping=[forget_unowned_threads, store.expire_records,
                                      lambda: outbox.expire(_retention_cutoff(settings))],
                        outbox=outbox)


def _retention_cutoff(settings) -> float:
    import time

    return time.time() - settings.turn_retention_days * 86400
