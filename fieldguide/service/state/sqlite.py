"""The embedded default: conversation state in one SQLite file (`sqlite:///PATH`).

The file holds the event logs (`fg_conversations`, `fg_events`), the turns and feedback
(`fg_turns`, `fg_feedback`) and LangGraph's own checkpoint tables (`checkpoints`, `writes`,
written by langgraph-checkpoint-sqlite's `SqliteSaver`). It is opened in WAL mode with
`synchronous=NORMAL`: a commit is a write to the log, no disk flush, and what was committed
survives the process being killed (only a power cut can lose the last moments).

The event logs are written by one thread of their own (`JournalWriter`): whatever was queued
while it committed goes into its next transaction, so a burst of tokens costs one commit
(and one page of log) instead of one each, and no request waits for the disk. An event
becomes visible to readers when its transaction has committed. The same thread copies the
log back into the database and empties it (a WAL checkpoint, which flushes the disk) every
`CHECKPOINT_SECONDS`; no commit does it on its way (`wal_autocheckpoint=0`).

One service process owns the file at a time (an exclusive lock beside it): the service ends
turns a restart interrupted when it opens the file, which would be wrong under a second live
process. Several processes share state through `redis://` instead.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from langgraph.checkpoint.sqlite import SqliteSaver

from fieldguide.errors import FieldguideError
from fieldguide.file_lock import holder, release, try_lock
from fieldguide.service.state.records import FeedbackRecord, TurnRecord, new_record, rate

log = logging.getLogger("fieldguide.service")

BUSY_TIMEOUT_MS = 5000
CHECKPOINT_SECONDS = 2.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS fg_conversations (
    id TEXT PRIMARY KEY, last_activity REAL NOT NULL, running INTEGER NOT NULL DEFAULT 0,
    ended_at INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS fg_events (
    conversation_id TEXT NOT NULL, id INTEGER NOT NULL, frame BLOB NOT NULL,
    PRIMARY KEY (conversation_id, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS fg_turns (
    conversation_id TEXT NOT NULL, turn INTEGER NOT NULL, started_at REAL NOT NULL, record TEXT NOT NULL,
    PRIMARY KEY (conversation_id, turn));
CREATE INDEX IF NOT EXISTS fg_turns_started ON fg_turns (started_at);
CREATE TABLE IF NOT EXISTS fg_feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id TEXT NOT NULL, turn INTEGER NOT NULL,
    at REAL NOT NULL, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS fg_feedback_at ON fg_feedback (at);
"""


def sqlite_path(url: str) -> Path:
    """`sqlite:///relative/or/absolute/path` (three slashes, then the path as written)."""
    path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else ""
    if not path:
        raise FieldguideError(f"FIELDGUIDE_STATE_URL={url!r}: write sqlite:///PATH "
                              "(e.g. sqlite:////var/lib/fieldguide/state.db)")
    return Path(path).expanduser()


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA wal_autocheckpoint=0")  # JournalWriter checkpoints, off the commits
    return conn


class JournalWriter:
    """Runs queued writes in order on one thread, many to a transaction; calls each write's
    `done` once its transaction has committed."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock, every: float = CHECKPOINT_SECONDS) -> None:
        self.conn = conn
        self.lock = lock
        self.every = every
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="fieldguide-journal", daemon=True)
        self._thread.start()

    def write(self, sql: str, params: tuple, done: Callable[[], None] | None = None) -> None:
        self._queue.put((sql, params, done))

    def write_together(self, statements: Sequence[tuple[str, tuple]], done: Callable[[], None] | None = None) -> None:
        """Several statements that always share a transaction."""
        self._queue.put((list(statements), (), done))

    def flush(self) -> None:
        """Wait until everything queued so far is committed."""
        finished = threading.Event()
        self._queue.put((None, (), finished.set))
        finished.wait()

    def close(self) -> None:
        self._queue.put(_STOP)
        self._thread.join(timeout=30)

    def _run(self) -> None:
        checkpointed = time.monotonic()
        while True:
            try:
                first = self._queue.get(timeout=self.every)
            except queue.Empty:
                first = None
            batch = [] if first is None else [first]
            while True:  # everything that queued up meanwhile joins this transaction
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = _STOP in batch
            writes = [item for item in batch if item is not _STOP]
            if writes:
                self._commit(writes)
            if stop or time.monotonic() - checkpointed >= self.every:
                checkpointed = time.monotonic()
                with self.lock, contextlib.suppress(sqlite3.Error):
                    self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if stop:
                return

    def _commit(self, writes: list) -> None:
        try:
            with self.lock:
                self.conn.execute("BEGIN")
                try:
                    for sql, params, _ in writes:
                        if isinstance(sql, list):
                            for statement, values in sql:
                                self.conn.execute(statement, values)
                        elif sql is not None:
                            self.conn.execute(sql, params)
                    self.conn.execute("COMMIT")
                except BaseException:
                    self.conn.execute("ROLLBACK")
                    raise
        except sqlite3.Error:  # the disk is full or gone: the service goes on from memory
            log.exception("could not write %d events to the conversation state %s", len(writes), self.conn)
        for _, _, done in writes:
            if done is not None:
                done()


_STOP = object()


@dataclass
class StoredConversation:
    id: str
    last_activity: float  # epoch seconds
    running: bool
    last_id: int
    events: list[tuple[int, bytes]]
    ended: bool = False  # the running turn's last event (`done`/`error`) is stored: nothing was cut off


class SqliteState:
    """Event journal and turn store over one connection (every call takes the lock)."""

    def __init__(self, path: Path, *, turn_retention_days: float = 90.0) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._owner = _take_ownership(path)
        self.conn = connect(path)
        self.conn.executescript(SCHEMA)
        columns = {row[1] for row in self.conn.execute("PRAGMA table_info(fg_conversations)")}
        if "ended_at" not in columns:  # a file from before the column
            self.conn.execute("ALTER TABLE fg_conversations ADD COLUMN ended_at INTEGER NOT NULL DEFAULT 0")
        self.retention_seconds = turn_retention_days * 86400
        self._lock = threading.Lock()
        self._mark_interrupted_turns()
        self._writer = JournalWriter(self.conn, self._lock)

    def _mark_interrupted_turns(self) -> None:
        """Turns still `running` in a file this process just took over were cut off by a restart."""
        self.conn.execute(
            "UPDATE fg_turns SET record = json_set(record, '$.status', 'interrupted', '$.finished_at', ?) "
            "WHERE json_extract(record, '$.status') = 'running'", (time.time(),))

    # -- the event journal (see ConversationRegistry) -----------------------------------
    # (every write goes through the writer's queue, in order; none waits for the disk)
    def create(self, conversation_id: str) -> None:
        self._writer.write("INSERT OR REPLACE INTO fg_conversations (id, last_activity, running) VALUES (?, ?, 0)",
                           (conversation_id, time.time()))

    def append(self, conversation_id: str, event_id: int, frame: bytes,
               committed: Callable[[int], None] | None = None, ends_turn: bool = False) -> None:
        """Store an event; `committed(event_id)` is called once it is on disk. The last event of
        a turn is stored with the mark that the turn ended, in one transaction: a process killed
        right after it was read never ends the turn a second time."""
        statements = [("INSERT OR REPLACE INTO fg_events (conversation_id, id, frame) VALUES (?, ?, ?)",
                       (conversation_id, event_id, frame))]
        if ends_turn:
            statements.append(("UPDATE fg_conversations SET ended_at = ? WHERE id = ?", (event_id, conversation_id)))
        self._writer.write_together(statements, None if committed is None else (lambda: committed(event_id)))

    def set_running(self, conversation_id: str, running: bool) -> None:
        if running:  # a new turn: its end is still to come
            self._writer.write("UPDATE fg_conversations SET running = 1, ended_at = 0, last_activity = ? WHERE id = ?",
                               (time.time(), conversation_id))
        else:
            self._writer.write("UPDATE fg_conversations SET running = 0, last_activity = ? WHERE id = ?",
                               (time.time(), conversation_id))

    def touch(self, conversation_id: str) -> None:
        self._writer.write("UPDATE fg_conversations SET last_activity = ? WHERE id = ?", (time.time(), conversation_id))

    def trim(self, conversation_id: str, up_to_id: int) -> None:
        """Forget the events with ids up to `up_to_id` (the log keeps the newest)."""
        if up_to_id > 0:
            self._writer.write("DELETE FROM fg_events WHERE conversation_id = ? AND id <= ?",
                               (conversation_id, up_to_id))

    def delete(self, conversation_id: str) -> None:
        self._writer.write("DELETE FROM fg_events WHERE conversation_id = ?", (conversation_id,))
        self._writer.write("DELETE FROM fg_conversations WHERE id = ?", (conversation_id,))

    def flush(self) -> None:
        self._writer.flush()

    def load(self, max_events: int) -> list[StoredConversation]:
        """Every stored conversation, least recently active first, with its newest events."""
        with self._lock:
            rows = self.conn.execute(
                "SELECT id, last_activity, running, ended_at FROM fg_conversations ORDER BY last_activity").fetchall()
            result = []
            for conversation_id, last_activity, running, ended_at in rows:
                events = self.conn.execute(
                    "SELECT id, frame FROM fg_events WHERE conversation_id = ? ORDER BY id DESC LIMIT ?",
                    (conversation_id, max_events)).fetchall()
                events.reverse()
                last_id = events[-1][0] if events else 0
                result.append(StoredConversation(conversation_id, float(last_activity), bool(running), last_id,
                                                 [(int(i), bytes(f)) for i, f in events],
                                                 ended=bool(running) and 0 < int(ended_at) <= last_id))
            return result

    def conversation_count(self) -> int:
        self.flush()
        with self._lock:
            return int(self.conn.execute("SELECT COUNT(*) FROM fg_conversations").fetchone()[0])

    def event_count(self, conversation_id: str | None = None) -> int:
        self.flush()
        with self._lock:
            if conversation_id is None:
                return int(self.conn.execute("SELECT COUNT(*) FROM fg_events").fetchone()[0])
            return int(self.conn.execute("SELECT COUNT(*) FROM fg_events WHERE conversation_id = ?",
                                         (conversation_id,)).fetchone()[0])

    # -- turns and feedback (TurnStore) ------------------------------------------------------
    def start(self, conversation_id: str, question: str, started_at: float | None = None) -> TurnRecord:
        with self._lock, self.conn:
            (last,) = self.conn.execute("SELECT COALESCE(MAX(turn), 0) FROM fg_turns WHERE conversation_id = ?",
                                        (conversation_id,)).fetchone()
            record = new_record(conversation_id, int(last) + 1, question, started_at)
            self.conn.execute("INSERT INTO fg_turns (conversation_id, turn, started_at, record) VALUES (?, ?, ?, ?)",
                              (conversation_id, record.turn, record.started_at, json.dumps(record.to_dict())))
            return record

    def finish(self, record: TurnRecord) -> None:
        with self._lock:
            self.conn.execute("UPDATE fg_turns SET record = ? WHERE conversation_id = ? AND turn = ?",
                              (json.dumps(record.to_dict(), ensure_ascii=False), record.conversation_id, record.turn))

    def turns(self, conversation_id: str) -> list[TurnRecord]:
        with self._lock:
            rows = self.conn.execute("SELECT record FROM fg_turns WHERE conversation_id = ? ORDER BY turn",
                                     (conversation_id,)).fetchall()
        return [TurnRecord.from_dict(json.loads(r)) for (r,) in rows]

    def turn(self, conversation_id: str, turn: int) -> TurnRecord | None:
        with self._lock:
            row = self.conn.execute("SELECT record FROM fg_turns WHERE conversation_id = ? AND turn = ?",
                                    (conversation_id, turn)).fetchone()
        return TurnRecord.from_dict(json.loads(row[0])) if row else None

    def turns_since(self, since: float = 0.0) -> Iterator[TurnRecord]:
        with self._lock:
            rows = self.conn.execute("SELECT record FROM fg_turns WHERE started_at >= ? ORDER BY started_at",
                                     (since,)).fetchall()
        return (TurnRecord.from_dict(json.loads(r)) for (r,) in rows)

    def add_feedback(self, conversation_id: str, turn: int, rating: str, comment: str = "",
                     at: float | None = None) -> FeedbackRecord | None:
        feedback = rate(self, conversation_id, turn, rating, comment, at)
        if feedback is None:
            return None
        with self._lock:
            self.conn.execute("INSERT INTO fg_feedback (conversation_id, turn, at, record) VALUES (?, ?, ?, ?)",
                              (conversation_id, turn, feedback.at, json.dumps(feedback.to_dict(), ensure_ascii=False)))
        return feedback

    def feedback_since(self, since: float = 0.0) -> Iterator[FeedbackRecord]:
        with self._lock:
            rows = self.conn.execute("SELECT record FROM fg_feedback WHERE at >= ? ORDER BY at", (since,)).fetchall()
        return (FeedbackRecord.from_dict(json.loads(r)) for (r,) in rows)

    # What the docs team's console counts (fieldguide/service/analytics.py), read by SQLite from
    # the stored JSON instead of parsing every record here: a few times faster on a busy store.
    def turn_facts_since(self, since: float = 0.0) -> list[dict]:
        with self._lock:
            rows = self.conn.execute(
                "SELECT conversation_id, turn, started_at, json_extract(record, '$.status'), "
                "json_extract(record, '$.abstain'), json_extract(record, '$.coverage') FROM fg_turns "
                "WHERE started_at >= ? ORDER BY started_at", (since,)).fetchall()
        return [{"conversation_id": c, "turn": t, "started_at": at, "status": status,
                 "abstain": None if abstain is None else bool(abstain), "coverage": coverage}
                for c, t, at, status, abstain, coverage in rows]

    def vote_facts_since(self, since: float = 0.0) -> list[dict]:
        with self._lock:
            rows = self.conn.execute(
                "SELECT conversation_id, turn, at, json_extract(record, '$.rating') FROM fg_feedback "
                "WHERE at >= ? ORDER BY at", (since,)).fetchall()
        return [{"conversation_id": c, "turn": t, "at": at, "rating": rating} for c, t, at, rating in rows]

    def expire_records(self, now: float | None = None) -> None:
        """Drop turns and feedback older than the retention period."""
        cutoff = (time.time() if now is None else now) - self.retention_seconds
        with self._lock, self.conn:
            self.conn.execute("DELETE FROM fg_turns WHERE started_at < ?", (cutoff,))
            self.conn.execute("DELETE FROM fg_feedback WHERE at < ?", (cutoff,))

    # -- health and shutdown -----------------------------------------------------------
    def ready(self) -> str | None:
        try:
            with self._lock:
                self.conn.execute("SELECT 1").fetchone()
        except sqlite3.Error as exc:
            return f"the conversation state file cannot be read ({exc})"
        return None

    def close(self) -> None:
        self._writer.close()  # (commits what is queued, then empties the log)
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()
        self._owner()


def _take_ownership(path: Path):
    """An exclusive lock on PATH.lock for as long as the service lives (released on any exit)."""
    lock_path = path.with_name(path.name + ".lock")
    handle = try_lock(lock_path)
    if handle is None:
        raise FieldguideError(
            f"The conversation state {path} is in use by another fieldguide service ({holder(lock_path)}). Run one "
            "service per SQLite file, or share state between several with FIELDGUIDE_STATE_URL=redis://HOST:PORT/DB.")
    return lambda: release(handle, lock_path)


class SqliteCheckpointer(SqliteSaver):
    """LangGraph's SqliteSaver on the state file, with what the service needs besides:

    * async methods (the service streams the graph asynchronously) that run the saver's own
      synchronous, lock-guarded code in a worker thread, so one saver serves the turns'
      event loop and LangServe's alike;
    * `trim_thread` (keep only a thread's newest checkpoint between turns) and
      `delete_thread` (the conversation was evicted): bounded like the memory saver;
    * `sweep`: threads no conversation owns (LangServe calls) are forgotten after a while.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(connect(path))
        with self.cursor() as cur:  # (creates LangGraph's tables first)
            cur.execute("CREATE TABLE IF NOT EXISTS fg_threads (thread_id TEXT PRIMARY KEY, at REAL NOT NULL)")

    def put(self, config, checkpoint, metadata, new_versions):
        result = super().put(config, checkpoint, metadata, new_versions)
        with self.lock:
            self.conn.execute("INSERT OR REPLACE INTO fg_threads (thread_id, at) VALUES (?, ?)",
                              (str(config["configurable"]["thread_id"]), time.time()))
        return result

    async def aget_tuple(self, config):
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(self, config, *, filter=None, before=None, limit=None):
        for item in await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before,
                                                                    limit=limit))):
            yield item

    async def aput(self, config, checkpoint, metadata, new_versions):
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)
        with self.lock:
            self.conn.execute("DELETE FROM fg_threads WHERE thread_id = ?", (str(thread_id),))

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    def trim_thread(self, thread_id: str) -> None:
        """Keep only the newest checkpoint of each namespace of the thread, and its writes."""
        with self.lock, self.conn:
            self.conn.execute(
                "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id NOT IN "
                "(SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ? GROUP BY checkpoint_ns)",
                (thread_id, thread_id))
            self.conn.execute(
                "DELETE FROM writes WHERE thread_id = ? AND checkpoint_id NOT IN "
                "(SELECT checkpoint_id FROM checkpoints WHERE thread_id = ?)", (thread_id, thread_id))
            self.conn.execute("UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE thread_id = ?", (thread_id,))

    def sweep(self, older_than_seconds: float, keep: set[str]) -> int:
        """Forget threads not written for `older_than_seconds`, except those in `keep`."""
        cutoff = time.time() - older_than_seconds
        with self.lock:
            stale = [t for (t,) in self.conn.execute("SELECT thread_id FROM fg_threads WHERE at < ?", (cutoff,))
                     if t not in keep]
        for thread_id in stale:
            self.delete_thread(thread_id)
        return len(stale)

    def thread_ids(self) -> set[str]:
        with self.lock:
            return {t for (t,) in self.conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}

    def checkpoint_count(self, thread_id: str) -> int:
        with self.lock:
            return int(self.conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?",
                                         (thread_id,)).fetchone()[0])

    def close(self) -> None:
        with self.lock:
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()
