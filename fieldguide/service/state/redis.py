"""Conversation state shared by several replicas: `redis://HOST:PORT/DB`.

* **Event logs** are Redis Streams, one per conversation. Entry ids are the SSE ids (`N-0`
  for event N), so a reader on any replica resumes with `XREAD` after its Last-Event-ID. An
  event is appended by a Lua script that allocates its id, stores its finished SSE frame and
  renews the keys' time to live in one step; `MAXLEN` keeps at most
  `max_events_per_conversation` of them.
* **A running turn** is claimed in the conversation's hash (`running`, `owner`) when it is
  accepted, atomically, so a follow-up sent to any replica while it runs gets 409. The replica
  running it renews a short lease (`LEASE_SECONDS`) with every event and every janitor round.
  A replica that dies leaves a lease that runs out: any replica (its janitor, or a reader
  waiting on that stream) then ends the turn with an `error` event that says so, once.
* **Turns and feedback** are kept in hashes and sorted sets for `turn_retention_days`.
* **Checkpoints** go to Postgres through LangGraph's own `PostgresSaver`
  (`FIELDGUIDE_CHECKPOINT_URL`): LangGraph's Redis saver needs the RedisJSON and RediSearch 2
  modules, which Debian's redis-server does not ship (see docs/operations.md).

Redis that is down fails a request within `dependency_timeout_seconds` with a plain message;
the client reconnects by itself once Redis is back.
"""
from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
import time
from typing import Any, Iterator

from fieldguide.errors import FieldguideError, StateUnavailable
from fieldguide.service.conversations import (
    INTERRUPTED_MESSAGE,
    ConversationLimitReached,
    TurnSide,
    new_conversation_id,
)
from fieldguide.service.state.records import FeedbackRecord, TurnRecord, new_record, rate
from fieldguide.service.state.redis_keys import (
    _APPEND, _FINISH, _INTERRUPT, _RESERVE, FINISH_POLL_SECONDS, KEY_PREFIX, LEASE_SECONDS, LISTEN_MARK_SECONDS,
    READ_BLOCK_MS, STATE_UNAVAILABLE, TERMINAL_EVENTS, Keys, _errors,
)

log = logging.getLogger("fieldguide.service")


class RedisConversation(TurnSide):
    """One conversation as this replica sees it: the log and the turn's claim live in Redis,
    the running task and its local listeners here."""

    def __init__(self, registry: "RedisConversationRegistry", conversation_id: str) -> None:
        self.registry = registry
        self.id = conversation_id
        self.task = None
        self.turn_active = False
        self.reserved = False
        self.cancel_reason: str | None = None
        self.turn_started_at_id = 0
        self.listeners = 0
        self.last_listened = time.monotonic()
        self.evicted = False
        self.owner = ""  # this replica's claim on the running turn

    # -- what Redis knows ------------------------------------------------------------------
    def _meta(self, *fields: str) -> list:
        return self.registry.call(self.registry.redis.hmget, self.registry.keys.meta(self.id), list(fields))

    @property
    def last_id(self) -> int:
        (value,) = self._meta("last_id")
        return int(value or 0)

    @property
    def running(self) -> bool:
        if self.reserved or self.turn_active:
            return True
        (value,) = self._meta("running")
        return value == b"1"

    # -- the turn --------------------------------------------------------------------------
    def reserve(self) -> bool:
        owner = f"{self.registry.replica}:{secrets.token_hex(4)}"
        keys = self.registry.keys
        result = self.registry.call(self.registry.reserve_script, keys=[
            keys.meta(self.id), keys.lease(self.id), keys.running, keys.index],
            args=[owner, int(LEASE_SECONDS * 1000), self.registry.ttl_ms, self.id, time.time()])
        if result < 0:
            return False
        self.owner = owner
        self.turn_started_at_id = int(result)
        self.last_listened = time.monotonic()
        self.cancel_reason = None
        self.reserved = True
        return True

    def append(self, name: str, data: dict[str, Any]) -> int:
        keys = self.registry.keys
        terminal = name in TERMINAL_EVENTS
        result = self.registry.call(self.registry.append_script, keys=[
            keys.meta(self.id), keys.events(self.id), keys.lease(self.id)],
            args=[name, json.dumps(data, ensure_ascii=False, separators=(",", ":")), self.registry.max_events,
                  self.registry.ttl_ms, "1" if terminal else "0", self.owner, int(LEASE_SECONDS * 1000)])
        if result == -2 and not terminal:
            raise FieldguideError("this answer was ended elsewhere (its replica was taken for gone)")
        return max(0, int(result))

    def renew_lease(self) -> None:
        if self.owner and (self.turn_active or self.reserved):
            self.registry.call(self.registry.redis.set, self.registry.keys.lease(self.id), self.owner,
                               px=int(LEASE_SECONDS * 1000), xx=False)

    def turn_ended(self) -> None:
        owner, self.owner = self.owner, ""
        self.reserved = False
        self.turn_active = False
        if owner and not self.evicted:
            keys = self.registry.keys
            self.registry.call(self.registry.finish_script, keys=[
                keys.meta(self.id), keys.lease(self.id), keys.running, keys.index], args=[owner, self.id, time.time()])

    def close(self) -> None:
        self.evicted = True

    def wake(self) -> None:  # readers wait on Redis, not on this process
        pass

    # -- readers ---------------------------------------------------------------------------
    def unheard_for(self, now: float) -> float:
        """Seconds since anyone, on any replica, was listening."""
        if self.listeners > 0:
            return 0.0
        try:
            (marked,) = self._meta("listened_at")
        except StateUnavailable:
            return 0.0
        remote = time.time() - float(marked) if marked else float("inf")
        return min(now - self.last_listened, remote)

    async def stream(self, cursor: int):
        """Frames after `cursor` from the conversation's stream until its turn has ended. A turn
        whose replica's lease ran out is ended here with an error event (once, whoever sees it)."""
        registry, keys = self.registry, self.registry.keys
        client = registry.async_client()
        events_key, meta_key = keys.events(self.id), keys.meta(self.id)
        marked = 0.0
        errors = _errors()
        try:
            releasing = False
            while not self.evicted:
                if releasing:  # nothing more will be written: wait for the claim's release only
                    await asyncio.sleep(FINISH_POLL_SECONDS)
                    result = None
                else:
                    result = await client.xread({events_key: f"{cursor}-0"}, count=1000, block=READ_BLOCK_MS)
                if result:
                    entries = result[0][1]
                    yield b"".join(fields[b"f"] for _entry_id, fields in entries)
                    cursor = int(entries[-1][0].split(b"-", 1)[0])
                running, last_id, ended_at = await client.hmget(meta_key, ["running", "last_id", "ended_at"])
                if running is None:  # evicted or expired meanwhile
                    return
                if running != b"1" and cursor >= int(last_id or 0):
                    return
                # the turn's last event is out; its claim is released a moment later
                releasing = running == b"1" and cursor >= int(last_id or 0) and int(ended_at or 0) == cursor
                now = time.time()
                if now - marked >= LISTEN_MARK_SECONDS:
                    marked = now
                    await client.hset(meta_key, "listened_at", now)
                if not result and running == b"1" and not await client.exists(keys.lease(self.id)):
                    await registry.interrupt_async(client, self.id)
        except errors:
            log.warning("Redis failed while streaming conversation %s", self.id, exc_info=True)
            # No id: the reader's Last-Event-ID stays at the last event it really got.
            yield ("event: error\r\ndata: " + json.dumps({"message": STATE_UNAVAILABLE}) + "\r\n\r\n").encode()


class RedisConversationRegistry:
    """The conversations in Redis, as the service's registry (see ConversationRegistry)."""

    def __init__(self, url: str, *, max_conversations: int, ttl_seconds: float, max_events: int,
                 timeout: float, on_evict=None, keys: Keys | None = None) -> None:
        import redis
        from redis.backoff import ConstantBackoff
        from redis.retry import Retry

        self.url = url
        self.max_conversations = max_conversations
        self.ttl_seconds = ttl_seconds
        # Redis forgets a conversation's keys itself only well after the janitors should have
        # (a backstop when no replica runs): a janitor's eviction also deletes its checkpoints.
        self.ttl_ms = int((ttl_seconds * 2 + 60) * 1000)
        self.max_events = max_events
        self.timeout = timeout
        self.on_evict = on_evict
        self.keys = keys or Keys()
        self.replica = secrets.token_hex(6)
        self._client_options = dict(socket_connect_timeout=timeout, socket_timeout=timeout + READ_BLOCK_MS / 1000,
                                    retry=Retry(ConstantBackoff(0.1), 1), health_check_interval=10)
        self.redis = redis.Redis.from_url(url, **self._client_options)
        self.append_script = self.redis.register_script(_APPEND)
        self.reserve_script = self.redis.register_script(_RESERVE)
        self.interrupt_script = self.redis.register_script(_INTERRUPT)
        self.finish_script = self.redis.register_script(_FINISH)
        self._async: dict[int, Any] = {}  # one asyncio client per event loop
        self._local: dict[str, RedisConversation] = {}
        self._lock = threading.Lock()

    # -- plumbing ----------------------------------------------------------------------------
    def call(self, function, *args, **kwargs):
        """A Redis call; connection failures become StateUnavailable (a plain message, logged)."""
        try:
            return function(*args, **kwargs)
        except _errors() as exc:
            log.warning("Redis at %s failed: %s", self.url, exc)
            raise StateUnavailable(STATE_UNAVAILABLE) from exc

    def async_client(self):
        import redis.asyncio

        loop = asyncio.get_running_loop()
        client = self._async.get(id(loop))
        if client is None:
            client = redis.asyncio.Redis.from_url(self.url, **self._client_options)
            self._async[id(loop)] = client
        return client

    async def interrupt_async(self, client, conversation_id: str) -> int:
        script = client.register_script(_INTERRUPT)
        return int(await script(keys=self._interrupt_keys(conversation_id),
                                args=self._interrupt_args(conversation_id), client=client))

    def _interrupt_keys(self, cid: str) -> list[str]:
        keys = self.keys
        return [keys.meta(cid), keys.events(cid), keys.lease(cid), keys.running]

    def _interrupt_args(self, cid: str) -> list:
        message = json.dumps({"message": INTERRUPTED_MESSAGE, "interrupted": True}, separators=(",", ":"))
        return [message, self.max_events, self.ttl_ms, cid]

    def ping(self) -> str | None:
        try:
            self.redis.ping()
        except _errors() as exc:
            return f"Redis is not reachable ({type(exc).__name__})"
        return None

    # -- the registry interface ----------------------------------------------------------------
    def __iter__(self):
        with self._lock:
            return iter(list(self._local.values()))

    def __len__(self) -> int:
        return int(self.call(self.redis.zcard, self.keys.index))

    def get(self, conversation_id: str) -> RedisConversation | None:
        if not self.call(self.redis.exists, self.keys.meta(conversation_id)):
            with self._lock:
                self._local.pop(conversation_id, None)
            return None
        with self._lock:
            conversation = self._local.get(conversation_id)
            if conversation is None:
                conversation = self._local[conversation_id] = RedisConversation(self, conversation_id)
            return conversation

    def create(self) -> RedisConversation:
        if self.running_count() >= self.max_conversations:
            raise ConversationLimitReached(f"{self.max_conversations} conversations are running; try again shortly")
        self._make_room()
        cid = new_conversation_id()
        now = time.time()
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(self.keys.meta(cid), mapping={"running": "0", "last_id": 0, "created": now, "listened_at": now})
        pipe.pexpire(self.keys.meta(cid), self.ttl_ms)
        pipe.zadd(self.keys.index, {cid: now})
        self.call(pipe.execute)
        conversation = RedisConversation(self, cid)
        with self._lock:
            self._local[cid] = conversation
        return conversation

    def _make_room(self) -> None:
        """At most `max_conversations` are kept: the least recently active finished ones go first."""
        excess = int(self.call(self.redis.zcard, self.keys.index)) - self.max_conversations + 1
        if excess <= 0:
            return
        for raw in self.call(self.redis.zrange, self.keys.index, 0, excess + 16):
            if excess <= 0:
                break
            cid = raw.decode()
            if self.call(self.redis.hget, self.keys.meta(cid), "running") == b"1":
                continue
            self.evict(cid)
            excess -= 1

    def touch(self, conversation: RedisConversation) -> None:
        if conversation.evicted:
            return
        pipe = self.redis.pipeline(transaction=False)
        pipe.zadd(self.keys.index, {conversation.id: time.time()})
        pipe.pexpire(self.keys.meta(conversation.id), self.ttl_ms)
        pipe.pexpire(self.keys.events(conversation.id), self.ttl_ms)
        self.call(pipe.execute)

    def evict(self, conversation_id: str) -> None:
        with self._lock:
            conversation = self._local.pop(conversation_id, None)
        if conversation is not None:
            conversation.cancel_turn("the conversation was evicted")
            conversation.close()
        if self.on_evict is not None:  # first: once the keys are gone, nothing names the thread
            self.on_evict(conversation_id)
        keys = self.keys
        pipe = self.redis.pipeline(transaction=True)
        pipe.delete(keys.meta(conversation_id), keys.events(conversation_id), keys.lease(conversation_id))
        pipe.zrem(keys.index, conversation_id)
        pipe.srem(keys.running, conversation_id)
        self.call(pipe.execute)

    def evict_expired(self, now: float | None = None) -> int:
        """The janitor's round: renew this replica's leases, end turns whose replica is gone,
        forget conversations idle past their time to live (with their checkpoints)."""
        for conversation in self:
            conversation.renew_lease()
        self.interrupt_abandoned()
        cutoff = time.time() - self.ttl_seconds
        expired = 0
        for raw in self.call(self.redis.zrangebyscore, self.keys.index, "-inf", cutoff, start=0, num=100):
            cid = raw.decode()
            if self.call(self.redis.hget, self.keys.meta(cid), "running") == b"1":
                continue
            self.evict(cid)
            expired += 1
        with self._lock:  # keep only the proxies this replica still needs
            for cid in [c for c, conv in self._local.items()
                        if not (conv.turn_active or conv.reserved or conv.listeners)]:
                del self._local[cid]
        return expired

    def interrupt_abandoned(self) -> int:
        ended = 0
        for raw in self.call(self.redis.smembers, self.keys.running):
            cid = raw.decode()
            if self.call(self.redis.exists, self.keys.lease(cid)):
                continue
            ended += int(self.call(self.interrupt_script, keys=self._interrupt_keys(cid),
                                   args=self._interrupt_args(cid)) > 0)
        return ended

    def running_count(self) -> int:
        with self._lock:
            return sum(1 for c in self._local.values() if c.turn_active or c.reserved)

    def ids(self) -> set[str]:
        return {raw.decode() for raw in self.call(self.redis.zrange, self.keys.index, 0, -1)}

    def close(self) -> None:
        self.redis.close()


class RedisTurnStore:
    """Turns and feedback in Redis (see records.TurnStore), kept `retention_days`."""

    def __init__(self, registry: RedisConversationRegistry, retention_days: float) -> None:
        self.registry = registry
        self.redis = registry.redis
        self.keys = registry.keys
        self.retention_seconds = retention_days * 86400

    def start(self, conversation_id: str, question: str, started_at: float | None = None) -> TurnRecord:
        key = self.keys.turns(conversation_id)
        number = int(self.registry.call(self.redis.hincrby, key, "count", 1))
        record = new_record(conversation_id, number, question, started_at)
        pipe = self.redis.pipeline(transaction=False)
        pipe.hset(key, str(number), json.dumps(record.to_dict(), ensure_ascii=False))
        pipe.expire(key, int(self.retention_seconds))
        pipe.zadd(self.keys.turn_index, {f"{conversation_id}#{number}": record.started_at})
        self.registry.call(pipe.execute)
        return record

    def finish(self, record: TurnRecord) -> None:
        self.registry.call(self.redis.hset, self.keys.turns(record.conversation_id), str(record.turn),
                           json.dumps(record.to_dict(), ensure_ascii=False))

    def turns(self, conversation_id: str) -> list[TurnRecord]:
        stored = self.registry.call(self.redis.hgetall, self.keys.turns(conversation_id))
        records = [TurnRecord.from_dict(json.loads(v)) for k, v in stored.items() if k != b"count"]
        return sorted(records, key=lambda r: r.turn)

    def turn(self, conversation_id: str, turn: int) -> TurnRecord | None:
        raw = self.registry.call(self.redis.hget, self.keys.turns(conversation_id), str(turn))
        return TurnRecord.from_dict(json.loads(raw)) if raw else None

    def turns_since(self, since: float = 0.0) -> Iterator[TurnRecord]:
        members = self.registry.call(self.redis.zrangebyscore, self.keys.turn_index, since, "+inf")
        pipe = self.redis.pipeline(transaction=False)
        for member in members:
            cid, _, number = member.decode().rpartition("#")
            pipe.hget(self.keys.turns(cid), number)
        return (TurnRecord.from_dict(json.loads(raw)) for raw in self.registry.call(pipe.execute) if raw)

    def add_feedback(self, conversation_id: str, turn: int, rating: str, comment: str = "",
                     at: float | None = None) -> FeedbackRecord | None:
        feedback = rate(self, conversation_id, turn, rating, comment, at)
        if feedback is None:
            return None
        member = json.dumps({**feedback.to_dict(), "nonce": secrets.token_hex(4)}, ensure_ascii=False)
        self.registry.call(self.redis.zadd, self.keys.feedback, {member: feedback.at})
        return feedback

    def feedback_since(self, since: float = 0.0) -> Iterator[FeedbackRecord]:
        members = self.registry.call(self.redis.zrangebyscore, self.keys.feedback, since, "+inf")
        return (FeedbackRecord.from_dict(json.loads(m)) for m in members)

    def expire_records(self) -> None:
        cutoff = time.time() - self.retention_seconds
        pipe = self.redis.pipeline(transaction=False)
        pipe.zremrangebyscore(self.keys.turn_index, "-inf", cutoff)
        pipe.zremrangebyscore(self.keys.feedback, "-inf", cutoff)
        self.registry.call(pipe.execute)


def open_redis_state(settings, url: str):
    from fieldguide.service.state.service_state import ServiceState
    from fieldguide.service.state.postgres import PostgresCheckpointer

    if not settings.checkpoint_url:
        raise FieldguideError(
            "FIELDGUIDE_STATE_URL is a redis:// URL, so the conversations' checkpoints need a store every replica "
            "shares: set FIELDGUIDE_CHECKPOINT_URL=postgresql://USER@HOST:PORT/DB (LangGraph's PostgresSaver). "
            "LangGraph's Redis saver needs the RedisJSON and RediSearch modules, which Debian's redis-server lacks.")
    checkpointer = PostgresCheckpointer(settings.checkpoint_url, timeout=settings.dependency_timeout_seconds)
    try:
        registry = RedisConversationRegistry(
            url, max_conversations=settings.max_conversations, ttl_seconds=settings.event_log_ttl_seconds,
            max_events=settings.max_events_per_conversation, timeout=settings.dependency_timeout_seconds,
            on_evict=checkpointer.delete_thread)
    except BaseException:
        checkpointer.close()
        raise
    turns = RedisTurnStore(registry, settings.turn_retention_days)
    ttl = settings.event_log_ttl_seconds

    def forget_unowned_threads() -> None:
        checkpointer.sweep(ttl, keep=registry.ids())

    from fieldguide.service.state.outbox import RedisOutbox

    outbox = RedisOutbox(registry, settings.turn_retention_days)
    return ServiceState(url, registry, checkpointer, turns, probes=[registry.ping, checkpointer.ping],
                        closers=[registry.close, checkpointer.close],
                        housekeeping=[forget_unowned_threads, turns.expire_records,
                                      lambda: outbox.expire(time.time() - outbox.retention_seconds)],
                        shared=True, outbox=outbox)
