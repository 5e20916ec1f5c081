"""The chunk feed: reads, hashes and chunks changed files on its own thread, in file order."""
from __future__ import annotations

import hashlib

import pytest

from fieldguide.errors import FieldguideError
from ingest.chunker import Chunker
from ingest.feed import ChunkFeed


def _files(tmp_path, pages: dict[str, str]):
    files = []
    for name, text in pages.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        files.append((name, path))
    return files


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_changed_and_new_files_arrive_in_order_and_unchanged_ones_are_skipped(tmp_path):
    pages = {"a.md": "# A\n\nalpha text\n", "b.md": "# B\n\nbeta text\n", "c.md": "# C\n\ngamma\n", "d.md": ""}
    known = {"a.md": {"sha256": _sha(pages["a.md"]), "chunk_count": 1},       # unchanged
             "b.md": {"sha256": "0" * 64, "chunk_count": 3}}                 # changed
    feed = ChunkFeed(_files(tmp_path, pages), known, True, Chunker).start()
    changed = list(feed)
    assert [(c.source, c.replaces) for c in changed] == [("b.md", True), ("c.md", False), ("d.md", False)]
    assert changed[0].sha256 == _sha(pages["b.md"]) and changed[0].chunks[0].heading_path == ["B"]
    assert changed[2].chunks == []  # an empty page still arrives: its record must be written
    counts = feed.counts
    assert (counts.files_skipped, counts.files_changed, counts.files_added, counts.chunks_replaced) == (1, 1, 2, 3)
    assert feed.get() is None  # the end stays the end


def test_another_chunker_version_rechunks_unchanged_files(tmp_path):
    pages = {"a.md": "# A\n\nalpha\n"}
    known = {"a.md": {"sha256": _sha(pages["a.md"]), "chunk_count": 1}}
    assert [c.source for c in ChunkFeed(_files(tmp_path, pages), known, False, Chunker).start()] == ["a.md"]


def test_an_unreadable_file_is_a_clear_error_after_the_files_before_it(tmp_path):
    files = _files(tmp_path, {"a.md": "# A\n\nalpha\n"}) + [("gone.md", tmp_path / "gone.md")]
    feed = ChunkFeed(files, {}, True, Chunker).start()
    assert feed.get().source == "a.md"
    with pytest.raises(FieldguideError, match="cannot read .*gone.md"):
        feed.get()
    assert feed.get() is None


def test_the_chunker_is_made_on_the_thread_and_only_when_a_file_changed(tmp_path):
    import threading

    pages = {"a.md": "# A\n\nalpha\n"}
    made = []

    def make_chunker():
        made.append(threading.current_thread().name)
        return Chunker()

    unchanged = {"a.md": {"sha256": _sha(pages["a.md"]), "chunk_count": 1}}
    assert list(ChunkFeed(_files(tmp_path, pages), unchanged, True, make_chunker).start()) == []
    assert made == []
    list(ChunkFeed(_files(tmp_path, pages), {}, True, make_chunker).start())
    assert made == ["fieldguide-chunker"]
