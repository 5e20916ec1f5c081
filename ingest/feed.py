"""Reading, hashing and chunking on a thread of their own, while the model encodes.

`ChunkFeed` walks the files an ingest was given in order: it reads each one, compares the
sha256 of its bytes with the store's record, and chunks the files that are new or changed.
Each such file arrives on the feed's queue as a `ChangedFile` (its chunks, whether it
replaces an older version) as soon as it is chunked, so the encoder starts on the first
files while later ones are still being read. Chunking is pure Python and the encoder runs
in native code that releases the interpreter lock, so on two cores the two overlap.

The thread only reads files; it never touches the store.
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from pathlib import Path

from fieldguide.errors import FieldguideError


@dataclass
class ChangedFile:
    source: str
    sha256: str
    chunks: list
    replaces: bool  # the store holds an older version of this file
    warnings: list[str]


@dataclass
class FeedCounts:
    files_skipped: int = 0
    files_changed: int = 0
    files_added: int = 0
    chunks_replaced: int = 0  # chunk count of the older versions of changed files


_END = object()


class ChunkFeed:
    """`for changed in feed:` yields ChangedFile items in file order; errors re-raise there."""

    def __init__(self, files: list[tuple[str, Path]], known: dict[str, dict], same_chunker: bool,
                 make_chunker, stored: dict[str, int] | None = None):
        self._files = files
        self._known = known
        self._stored = stored  # source -> chunks really stored (a killed run leaves more or fewer); None: unknown
        self._same_chunker = same_chunker
        self._make_chunker = make_chunker  # called on the thread, at the first file to chunk
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._stop = threading.Event()
        self.counts = FeedCounts()
        self._thread = threading.Thread(target=self._run, name="fieldguide-chunker", daemon=True)

    def start(self) -> "ChunkFeed":
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the thread to end after the file in hand (the consumer failed)."""
        self._stop.set()

    def get(self, block: bool = True):
        """The next ChangedFile, None when the feed has ended; with block=False, also
        `queue.Empty` when nothing is ready yet."""
        item = self._queue.get(block=block)
        if item is _END:
            self._queue.put(_END)  # every later call sees the end too
            return None
        if isinstance(item, BaseException):
            self._queue.put(_END)
            raise item
        return item

    def __iter__(self):
        while (item := self.get()) is not None:
            yield item

    def _run(self) -> None:
        from ingest.chunker import file_sha256

        chunker = None
        try:
            for source, path in self._files:
                if self._stop.is_set():
                    break
                try:
                    raw = path.read_bytes()
                except OSError as exc:
                    raise FieldguideError(f"cannot read {path}: {exc.strerror or exc}") from exc
                sha = file_sha256(raw)
                record = self._known.get(source)
                stored = self._stored.get(source, 0) if self._stored is not None else None
                if record is None:
                    self.counts.files_added += 1
                elif (record["sha256"] == sha and self._same_chunker
                      and stored in (None, record["chunk_count"])):
                    self.counts.files_skipped += 1
                    continue
                else:
                    self.counts.files_changed += 1
                    self.counts.chunks_replaced += record["chunk_count"]
                chunker = chunker or self._make_chunker()
                chunked = chunker.chunk_bytes(raw, source)
                # an unrecorded file with chunks stored is what an interrupted run left: replaced too
                replaces = record is not None or bool(stored)
                self._queue.put(ChangedFile(source, sha, chunked.chunks, replaces, chunked.warnings))
        except BaseException as exc:  # handed to the consumer, which re-raises it
            self._queue.put(exc)
        self._queue.put(_END)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)
