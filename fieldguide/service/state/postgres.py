"""Checkpoints every replica shares: LangGraph's own `PostgresSaver` (`FIELDGUIDE_CHECKPOINT_URL`).

The saver runs over a small psycopg connection pool whose waits are bounded by
`dependency_timeout_seconds`, so a Postgres that is down fails a turn in seconds, and the pool
reconnects by itself when it is back. As with the other backends, a thread keeps only its
newest checkpoint between turns (`trim_thread`, LangGraph's own `prune(keep_latest)`), an
evicted conversation's thread is deleted, and threads no conversation owns (LangServe calls)
are forgotten after the event logs' time to live (`sweep`).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Sequence

from langgraph.checkpoint.postgres import PostgresSaver

from fieldguide.errors import StateUnavailable

log = logging.getLogger("fieldguide.service")

CHECKPOINTS_UNAVAILABLE = ("The conversation history store (Postgres) is not reachable right now. "
                           "Please try again in a moment.")


class PostgresCheckpointer(PostgresSaver):
    def __init__(self, url: str, *, timeout: float = 3.0, max_connections: int = 8) -> None:
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        self.url = url
        pool = ConnectionPool(url, min_size=1, max_size=max_connections, timeout=timeout, open=False,
                              check=ConnectionPool.check_connection,
                              kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row,
                                      "connect_timeout": max(1, int(timeout))})
        super().__init__(pool)
        try:
            pool.open(wait=True, timeout=timeout)
            self.setup()
            self._execute("CREATE TABLE IF NOT EXISTS fg_threads (thread_id TEXT PRIMARY KEY, at DOUBLE PRECISION)")
        except Exception as exc:
            pool.close()
            raise StateUnavailable(f"Cannot use the checkpoint store FIELDGUIDE_CHECKPOINT_URL: {_short(exc)}") from exc

    def _guard(self, function, *args, **kwargs):
        import psycopg
        import psycopg_pool

        try:
            return function(*args, **kwargs)
        except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
            log.warning("Postgres checkpoint store failed: %s", exc)
            raise StateUnavailable(CHECKPOINTS_UNAVAILABLE) from exc

    def _execute(self, sql: str, params: tuple = (), fetch: bool = False) -> list[dict]:
        def run() -> list[dict]:
            with self._cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall() if fetch else []

        return self._guard(run)

    # -- the saver, guarded, with async twins running it in a worker thread -----------------
    def get_tuple(self, config):
        return self._guard(super().get_tuple, config)

    def put(self, config, checkpoint, metadata, new_versions):
        result = self._guard(super().put, config, checkpoint, metadata, new_versions)
        self._execute("INSERT INTO fg_threads (thread_id, at) VALUES (%s, %s) "
                      "ON CONFLICT (thread_id) DO UPDATE SET at = EXCLUDED.at",
                      (str(config["configurable"]["thread_id"]), time.time()))
        return result

    def put_writes(self, config, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        self._guard(super().put_writes, config, writes, task_id, task_path)

    async def aget_tuple(self, config):
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(self, config, *, filter=None, before=None, limit=None):
        items = await asyncio.to_thread(lambda: list(self._guard(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit)))))
        for item in items:
            yield item

    async def aput(self, config, checkpoint, metadata, new_versions):
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config, writes, task_id: str, task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    # -- bounds -------------------------------------------------------------------------------
    def delete_thread(self, thread_id: str) -> None:
        self._guard(super().delete_thread, thread_id)
        self._execute("DELETE FROM fg_threads WHERE thread_id = %s", (str(thread_id),))

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    def trim_thread(self, thread_id: str) -> None:
        self._guard(self.prune, [thread_id], strategy="keep_latest")

    def sweep(self, older_than_seconds: float, keep: set[str]) -> int:
        rows = self._execute("SELECT thread_id FROM fg_threads WHERE at < %s", (time.time() - older_than_seconds,),
                             fetch=True)
        stale = [row["thread_id"] for row in rows if row["thread_id"] not in keep]
        for thread_id in stale:
            self.delete_thread(thread_id)
        return len(stale)

    def thread_ids(self) -> set[str]:
        return {row["thread_id"] for row in self._execute("SELECT DISTINCT thread_id FROM checkpoints", fetch=True)}

    def checkpoint_count(self, thread_id: str) -> int:
        rows = self._execute("SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = %s", (thread_id,), fetch=True)
        return int(rows[0]["n"])

    def ping(self) -> str | None:
        try:
            self._execute("SELECT 1")
        except Exception as exc:
            return f"the checkpoint store (Postgres) is not reachable ({type(exc).__name__})"
        return None

    def close(self) -> None:
        self.conn.close()


def _short(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:200]
