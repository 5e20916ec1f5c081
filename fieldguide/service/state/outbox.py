"""The handoff outbox: support requests stored before anyone tries to deliver them.

`POST /conversations/{id}/handoff` answers 202 only once its request is stored here, one
*delivery* per configured target (`webhook`, `email`); the handoff worker
(`fieldguide.service.handoff`) then claims due deliveries, sends them and marks each delivered
or due again later. A receiver that is down only delays a delivery: nothing is dropped until it
has been tried for `give_up_after` seconds (then it is kept, marked `failed`, for the docs
team's console to show).

Claiming is a lease: a claimed delivery is not due again until `lease_seconds` have passed, so
two workers (replicas sharing Redis) never send the same delivery at once, and one whose
worker died in the middle is sent again after the lease. Delivery is therefore at least once;
receivers tell repeats apart by the handoff id every delivery carries (a repeat happens only when
a worker dies, or a receiver times out, after the receiver took the request and before the
worker recorded it).

Backends follow `FIELDGUIDE_STATE_URL`, like the rest of the conversation state:

* SQLite: a table `fg_handoffs` in the state file, written through a connection of its own;
  a request is committed (WAL) before the 202 is sent, so it survives the process being killed;
* Redis: a hash per delivery and a sorted set of due deliveries; claims are one Lua script each
  (kept as durable as Redis is configured to be: turn on AOF for handoffs to survive a Redis
  restart);
* memory: this process only (lost on restart, like everything of `memory://`).

A delivered request's payload (the transcript, the reader's contact) is removed at once: what is
kept is that it was delivered, when, and after how many attempts.
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

STATUSES = ("pending", "delivered", "failed")


@dataclass
class Delivery:
    id: str  # the handoff's id: every target's delivery of one request shares it
    target: str  # "webhook" | "email"
    payload: dict[str, Any] | None  # None once delivered
    created_at: float
    status: str = "pending"
    attempts: int = 0  # claims so far (the one in flight included)
    next_at: float = 0.0  # when it is due (again)
    last_error: str | None = None
    delivered_at: float | None = None

    def summary(self) -> dict[str, Any]:
        """What may be shown about it without the request itself (no transcript, no contact)."""
        return {"id": self.id, "target": self.target, "status": self.status, "attempts": self.attempts,
                "created_at": self.created_at, "delivered_at": self.delivered_at, "last_error": self.last_error}


class Outbox(Protocol):
    def add(self, handoff_id: str, targets: list[str], payload: dict[str, Any], now: float | None = None) -> bool:
        """Store one delivery per target, due now; False (and nothing stored) when this handoff id
        is stored already (a repeated request)."""

    def claim(self, now: float, lease_seconds: float, limit: int = 10) -> list[Delivery]:
        """Up to `limit` pending deliveries due by `now`, leased to the caller (attempts + 1)."""

    def delivered(self, delivery: Delivery, now: float) -> None: ...

    def retry(self, delivery: Delivery, error: str, next_at: float, give_up: bool = False) -> None:
        """A failed attempt: due again at `next_at`, or `failed` for good when `give_up`."""

    def next_due(self) -> float | None:
        """When the earliest pending delivery is due (None: nothing pending)."""

    def deliveries(self, since: float = 0.0) -> list[Delivery]:
        """Deliveries created at or after `since`, oldest first."""

    def expire(self, before: float) -> None:
        """Forget delivered and failed deliveries created before `before`."""


def _error_text(error: str) -> str:
    return " ".join(str(error).split())[:500]


class MemoryOutbox:
    def __init__(self) -> None:
        self._items: dict[tuple[str, str], Delivery] = {}
        self._lock = threading.Lock()

    def add(self, handoff_id: str, targets: list[str], payload: dict[str, Any], now: float | None = None) -> bool:
        now = time.time() if now is None else now
        with self._lock:
            if any(key[0] == handoff_id for key in self._items):
                return False
            for target in targets:
                self._items[(handoff_id, target)] = Delivery(handoff_id, target, json.loads(json.dumps(payload)),
                                                             now, next_at=now)
            return True

    def claim(self, now: float, lease_seconds: float, limit: int = 10) -> list[Delivery]:
        with self._lock:
            due = sorted((d for d in self._items.values() if d.status == "pending" and d.next_at <= now),
                         key=lambda d: (d.next_at, d.created_at))[:limit]
            claimed = []
            for d in due:
                d.attempts += 1
                d.next_at = now + lease_seconds
                claimed.append(replace(d))
            return claimed

    def delivered(self, delivery: Delivery, now: float) -> None:
        with self._lock:
            d = self._items.get((delivery.id, delivery.target))
            if d is not None:
                d.status, d.delivered_at, d.payload, d.last_error = "delivered", now, None, None

    def retry(self, delivery: Delivery, error: str, next_at: float, give_up: bool = False) -> None:
        with self._lock:
            d = self._items.get((delivery.id, delivery.target))
            if d is not None and d.status == "pending":
                d.last_error = _error_text(error)
                d.next_at = next_at
                if give_up:
                    d.status = "failed"

    def next_due(self) -> float | None:
        with self._lock:
            return min((d.next_at for d in self._items.values() if d.status == "pending"), default=None)

    def deliveries(self, since: float = 0.0) -> list[Delivery]:
        with self._lock:
            return sorted((replace(d) for d in self._items.values() if d.created_at >= since),
                          key=lambda d: (d.created_at, d.id, d.target))

    def expire(self, before: float) -> None:
        with self._lock:
            for key in [k for k, d in self._items.items() if d.status != "pending" and d.created_at < before]:
                del self._items[key]

    def close(self) -> None:
        pass


SCHEMA = """
CREATE TABLE IF NOT EXISTS fg_handoffs (
    id TEXT NOT NULL, target TEXT NOT NULL, created_at REAL NOT NULL, payload TEXT,
    status TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0, next_at REAL NOT NULL,
    last_error TEXT, delivered_at REAL, PRIMARY KEY (id, target));
CREATE INDEX IF NOT EXISTS fg_handoffs_due ON fg_handoffs (status, next_at);
CREATE INDEX IF NOT EXISTS fg_handoffs_created ON fg_handoffs (created_at);
"""
_COLUMNS = "id, target, payload, created_at, status, attempts, next_at, last_error, delivered_at"


def _row(row) -> Delivery:
    id_, target, payload, created_at, status, attempts, next_at, last_error, delivered_at = row
    return Delivery(id_, target, json.loads(payload) if payload else None, float(created_at), status, int(attempts),
                    float(next_at), last_error, None if delivered_at is None else float(delivered_at))


class SqliteOutbox:
    """The outbox in the state's SQLite file, over a connection of its own (every call takes its lock)."""

    def __init__(self, path: Path) -> None:
        from fieldguide.service.state.sqlite import connect

        self.conn = connect(path)
        self.conn.executescript(SCHEMA)
        self._lock = threading.Lock()

    def add(self, handoff_id: str, targets: list[str], payload: dict[str, Any], now: float | None = None) -> bool:
        now = time.time() if now is None else now
        body = json.dumps(payload, ensure_ascii=False)
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                if self.conn.execute("SELECT 1 FROM fg_handoffs WHERE id = ? LIMIT 1", (handoff_id,)).fetchone():
                    self.conn.execute("ROLLBACK")
                    return False
                self.conn.executemany(
                    "INSERT INTO fg_handoffs (id, target, created_at, payload, next_at) VALUES (?, ?, ?, ?, ?)",
                    [(handoff_id, target, now, body, now) for target in targets])
                self.conn.execute("COMMIT")  # on disk (the WAL) before the request is answered
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        return True

    def claim(self, now: float, lease_seconds: float, limit: int = 10) -> list[Delivery]:
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                rows = self.conn.execute(
                    f"SELECT {_COLUMNS} FROM fg_handoffs WHERE status = 'pending' AND next_at <= ? "
                    "ORDER BY next_at, created_at LIMIT ?", (now, limit)).fetchall()
                self.conn.executemany(
                    "UPDATE fg_handoffs SET attempts = attempts + 1, next_at = ? WHERE id = ? AND target = ?",
                    [(now + lease_seconds, r[0], r[1]) for r in rows])
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        return [replace(_row(r), attempts=int(r[5]) + 1, next_at=now + lease_seconds) for r in rows]

    def delivered(self, delivery: Delivery, now: float) -> None:
        with self._lock:
            self.conn.execute("UPDATE fg_handoffs SET status = 'delivered', delivered_at = ?, payload = NULL, "
                              "last_error = NULL WHERE id = ? AND target = ?", (now, delivery.id, delivery.target))

    def retry(self, delivery: Delivery, error: str, next_at: float, give_up: bool = False) -> None:
        with self._lock:
            self.conn.execute("UPDATE fg_handoffs SET last_error = ?, next_at = ?, status = ? "
                              "WHERE id = ? AND target = ? AND status = 'pending'",
                              (_error_text(error), next_at, "failed" if give_up else "pending", delivery.id,
                               delivery.target))

    def next_due(self) -> float | None:
        with self._lock:
            (value,) = self.conn.execute("SELECT MIN(next_at) FROM fg_handoffs WHERE status = 'pending'").fetchone()
        return None if value is None else float(value)

    def deliveries(self, since: float = 0.0) -> list[Delivery]:
        with self._lock:
            rows = self.conn.execute(f"SELECT {_COLUMNS} FROM fg_handoffs WHERE created_at >= ? "
                                     "ORDER BY created_at, id, target", (since,)).fetchall()
        return [_row(r) for r in rows]

    def expire(self, before: float) -> None:
        with self._lock:
            self.conn.execute("DELETE FROM fg_handoffs WHERE status != 'pending' AND created_at < ?", (before,))

    def close(self) -> None:
        with self._lock:
            try:
                self.conn.close()
            except sqlite3.Error:
                pass


_ADD = """
for i = 1, #ARGV - 2 do
  if redis.call('EXISTS', KEYS[1] .. ARGV[i + 2]) == 1 then return 0 end
end
for i = 1, #ARGV - 2 do
  local member = ARGV[i + 2]
  redis.call('HSET', KEYS[1] .. member, 'payload', ARGV[1], 'created_at', ARGV[2], 'status', 'pending',
             'attempts', 0, 'next_at', ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[2], member)
  redis.call('ZADD', KEYS[3], ARGV[2], member)
end
return 1
"""

_CLAIM = """
local members = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, member in ipairs(members) do
  local key = KEYS[1] .. member
  if redis.call('HGET', key, 'status') == 'pending' then
    redis.call('ZADD', KEYS[2], ARGV[2], member)
    redis.call('HINCRBY', key, 'attempts', 1)
    redis.call('HSET', key, 'next_at', ARGV[2])
    table.insert(out, member)
    table.insert(out, redis.call('HGET', key, 'payload') or '')
    table.insert(out, redis.call('HGET', key, 'created_at'))
    table.insert(out, redis.call('HGET', key, 'attempts'))
  else
    redis.call('ZREM', KEYS[2], member)
  end
end
return out
"""


class RedisOutbox:
    """The outbox in Redis: `<prefix>handoff:<id>:<target>` hashes, `<prefix>handoffs:due` (pending
    deliveries by when they are due) and `<prefix>handoffs` (every delivery by creation)."""

    def __init__(self, registry, retention_days: float) -> None:
        self.registry = registry
        self.redis = registry.redis
        prefix = registry.keys.prefix
        self.item_prefix = prefix + "handoff:"
        self.due_key = prefix + "handoffs:due"
        self.all_key = prefix + "handoffs"
        self.retention_seconds = retention_days * 86400
        self._add = self.redis.register_script(_ADD)
        self._claim = self.redis.register_script(_CLAIM)

    def _member(self, handoff_id: str, target: str) -> str:
        return f"{handoff_id}:{target}"

    def add(self, handoff_id: str, targets: list[str], payload: dict[str, Any], now: float | None = None) -> bool:
        now = time.time() if now is None else now
        members = [self._member(handoff_id, t) for t in targets]
        result = self.registry.call(self._add, keys=[self.item_prefix, self.due_key, self.all_key],
                                    args=[json.dumps(payload, ensure_ascii=False), repr(now), *members])
        return int(result) == 1

    def claim(self, now: float, lease_seconds: float, limit: int = 10) -> list[Delivery]:
        flat = self.registry.call(self._claim, keys=[self.item_prefix, self.due_key],
                                  args=[repr(now), repr(now + lease_seconds), limit])
        claimed = []
        for i in range(0, len(flat), 4):
            member, payload, created_at, attempts = (v.decode() if isinstance(v, bytes) else v for v in flat[i:i + 4])
            handoff_id, _, target = member.rpartition(":")
            claimed.append(Delivery(handoff_id, target, json.loads(payload) if payload else None, float(created_at),
                                    "pending", int(attempts), now + lease_seconds))
        return claimed

    def delivered(self, delivery: Delivery, now: float) -> None:
        member = self._member(delivery.id, delivery.target)
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(self.item_prefix + member, mapping={"status": "delivered", "delivered_at": repr(now)})
        pipe.hdel(self.item_prefix + member, "payload", "last_error")
        pipe.zrem(self.due_key, member)
        pipe.expire(self.item_prefix + member, int(self.retention_seconds))
        self.registry.call(pipe.execute)

    def retry(self, delivery: Delivery, error: str, next_at: float, give_up: bool = False) -> None:
        member = self._member(delivery.id, delivery.target)
        pipe = self.redis.pipeline(transaction=True)
        if give_up:
            pipe.hset(self.item_prefix + member, mapping={"status": "failed", "last_error": _error_text(error)})
            pipe.zrem(self.due_key, member)
        else:
            pipe.hset(self.item_prefix + member, mapping={"last_error": _error_text(error), "next_at": repr(next_at)})
            pipe.zadd(self.due_key, {member: next_at}, xx=True)
        self.registry.call(pipe.execute)

    def next_due(self) -> float | None:
        first = self.registry.call(self.redis.zrange, self.due_key, 0, 0, withscores=True)
        return float(first[0][1]) if first else None

    def deliveries(self, since: float = 0.0) -> list[Delivery]:
        members = self.registry.call(self.redis.zrangebyscore, self.all_key, since, "+inf")
        pipe = self.redis.pipeline(transaction=False)
        for m in members:
            pipe.hgetall(self.item_prefix + m.decode())
        out = []
        for m, h in zip(members, self.registry.call(pipe.execute)):
            if not h:
                continue
            h = {k.decode(): v.decode() for k, v in h.items()}
            handoff_id, _, target = m.decode().rpartition(":")
            out.append(Delivery(handoff_id, target, json.loads(h["payload"]) if h.get("payload") else None,
                                float(h["created_at"]), h.get("status", "pending"), int(h.get("attempts", 0)),
                                float(h.get("next_at", 0)), h.get("last_error"),
                                float(h["delivered_at"]) if h.get("delivered_at") else None))
        return out

    def expire(self, before: float) -> None:
        old = self.registry.call(self.redis.zrangebyscore, self.all_key, "-inf", before)
        for m in old:
            member = m.decode()
            if self.registry.call(self.redis.hget, self.item_prefix + member, "status") != b"pending":
                pipe = self.redis.pipeline(transaction=True)
                pipe.delete(self.item_prefix + member)
                pipe.zrem(self.all_key, member)
                self.registry.call(pipe.execute)

    def close(self) -> None:
        pass
