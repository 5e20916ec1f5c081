"""A LangGraph checkpointer whose memory stays flat however many conversations pass.

`InMemorySaver` keeps every checkpoint of every thread forever. Follow-up questions only
need a conversation's latest state, so this saver keeps, per thread, only the newest
checkpoint once a turn ends (`trim_thread`), forgets whole threads on request
(`delete_thread`, called when a conversation is evicted) and, as a backstop for threads
nobody evicts (e.g. LangServe calls), keeps at most `max_threads`, least recently used
dropped first. Per-thread key indexes keep every deletion proportional to that thread's
size instead of scanning the whole store.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Sequence

from langgraph.checkpoint.memory import InMemorySaver


class BoundedMemorySaver(InMemorySaver):
    def __init__(self, max_threads: int = 1000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_threads = max_threads
        self._recent: OrderedDict[str, None] = OrderedDict()  # thread ids, least recently used first
        self._blob_keys: dict[str, set[tuple]] = {}
        self._write_keys: dict[str, set[tuple]] = {}
        self._lock = threading.RLock()  # sync graphs call the saver from worker threads

    # -- bookkeeping on write ----------------------------------------------------------
    def _touch(self, thread_id: str) -> None:
        self._recent[thread_id] = None
        self._recent.move_to_end(thread_id)
        while len(self._recent) > self.max_threads:
            oldest = next(iter(self._recent))
            self._delete_thread_locked(oldest)

    def put(self, config, checkpoint, metadata, new_versions):
        with self._lock:
            result = super().put(config, checkpoint, metadata, new_versions)
            thread_id = config["configurable"]["thread_id"]
            ns = config["configurable"]["checkpoint_ns"]
            keys = self._blob_keys.setdefault(thread_id, set())
            keys.update((thread_id, ns, channel, version) for channel, version in new_versions.items())
            self._touch(thread_id)
            return result

    def put_writes(self, config, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        with self._lock:
            super().put_writes(config, writes, task_id, task_path)
            thread_id = config["configurable"]["thread_id"]
            key = (thread_id, config["configurable"].get("checkpoint_ns", ""), config["configurable"]["checkpoint_id"])
            self._write_keys.setdefault(thread_id, set()).add(key)

    # -- forgetting ----------------------------------------------------------------------
    def delete_thread(self, thread_id: str) -> None:
        with self._lock:
            self._delete_thread_locked(thread_id)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    def _delete_thread_locked(self, thread_id: str) -> None:
        self.storage.pop(thread_id, None)
        for key in self._write_keys.pop(thread_id, ()):
            self.writes.pop(key, None)
        for key in self._blob_keys.pop(thread_id, ()):
            self.blobs.pop(key, None)
        self._recent.pop(thread_id, None)

    def trim_thread(self, thread_id: str) -> None:
        """Keep only the newest checkpoint of each namespace of `thread_id` (and what it refers to)."""
        with self._lock:
            namespaces = self.storage.get(thread_id)
            if not namespaces:
                return
            live_blobs: set[tuple] = set()
            live_writes: set[tuple] = set()
            for ns, checkpoints in namespaces.items():
                if not checkpoints:
                    continue
                newest = max(checkpoints)  # ids are time-ordered
                saved, metadata, _parent = checkpoints[newest]
                for old in [cid for cid in checkpoints if cid != newest]:
                    del checkpoints[old]
                checkpoints[newest] = (saved, metadata, None)
                versions = self.serde.loads_typed(saved).get("channel_versions", {})
                live_blobs.update((thread_id, ns, channel, version) for channel, version in versions.items())
                live_writes.add((thread_id, ns, newest))
            for key in self._blob_keys.get(thread_id, set()) - live_blobs:
                self.blobs.pop(key, None)
            self._blob_keys[thread_id] = live_blobs & self._blob_keys.get(thread_id, set())
            for key in self._write_keys.get(thread_id, set()) - live_writes:
                self.writes.pop(key, None)
            self._write_keys[thread_id] = live_writes & self._write_keys.get(thread_id, set())

    def thread_count(self) -> int:
        return len(self._recent)

    # -- the interface every state backend's checkpointer offers (see fieldguide.service.state)
    def sweep(self, older_than_seconds: float, keep: set[str]) -> int:
        """Nothing to do: `max_threads` already bounds the threads nobody evicts."""
        return 0

    def thread_ids(self) -> set[str]:
        with self._lock:
            return set(self.storage)

    def checkpoint_count(self, thread_id: str) -> int:
        with self._lock:
            return sum(len(checkpoints) for checkpoints in self.storage.get(thread_id, {}).values())

    def close(self) -> None:
        pass
