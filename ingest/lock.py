"""One ingest of a collection at a time: an exclusive lock the kernel releases however the
holder ends (even by SIGKILL), so there is never a stale lock to clean up.

The lock is a file in `<data_dir>/locks/`, named after the Weaviate the collection lives in
and the collection itself, so two ingests of one collection on this machine (a `fieldguide
ingest` and a `fieldguide serve --docs`, two terminals) take turns, and ingests of different
collections do not wait for each other. The second waits, saying who it waits for, or with
`wait=False` refuses at once. The holder removes the file when it is done.
"""
from __future__ import annotations

import contextlib
import hashlib
import time
from pathlib import Path

from fieldguide.errors import FieldguideError
from fieldguide.file_lock import holder, release, try_lock


class IngestBusy(FieldguideError):
    """Another ingest of the same collection is running."""


def lock_path(settings) -> Path:
    where = settings.weaviate_url or f"local:{settings.local_http_port}"
    key = hashlib.sha1(f"{where}|{settings.collection}".encode()).hexdigest()[:16]
    return Path(settings.data_dir) / "locks" / f"ingest-{settings.collection}-{key}.lock"


@contextlib.contextmanager
def ingest_lock(settings, *, wait: bool = True, log=None, poll_seconds: float = 0.5):
    """Hold the collection's ingest lock for the block."""
    path = lock_path(settings)
    told = False
    while (handle := try_lock(path)) is None:
        if not wait:
            raise IngestBusy(f"Another ingest of collection {settings.collection} is running ({holder(path)}). "
                             "Wait for it to finish, or run this one again without --no-wait to wait.")
        if not told and log is not None:
            log(f"waiting: another ingest of collection {settings.collection} is running ({holder(path)})")
            told = True
        time.sleep(poll_seconds)
    try:
        yield
    finally:
        release(handle, path)
