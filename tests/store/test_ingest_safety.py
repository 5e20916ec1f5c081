"""Ingest safety: one ingest of a collection at a time, a SIGKILLed ingest is completed by the next
run with no duplicates and no orphans, and a collection is never mirrored onto another folder
(`serve` ingests nothing unless a docs folder is named for it)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from store_corpus import PAGES, write_corpus

pytestmark = [pytest.mark.weaviate, pytest.mark.models]

SAMPLE_DOCS = Path(__file__).resolve().parents[2] / "fieldguide" / "sample_docs"


def cli_env(settings, tmp_path) -> dict:
    env = dict(os.environ, FIELDGUIDE_COLLECTION=settings.collection, FIELDGUIDE_DATA_DIR=str(tmp_path / "data"))
    env["FIELDGUIDE_WEAVIATE_URL"] = settings.weaviate_url
    env["FIELDGUIDE_WEAVIATE_GRPC_PORT"] = str(settings.weaviate_grpc_port)
    env.pop("FIELDGUIDE_DOCS_DIR", None)  # a folder is named only where a test names one
    return env


def fieldguide(*args, env, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fieldguide.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_a_second_ingest_of_the_collection_waits_or_refuses(weaviate_settings, tmp_path):
    from ingest.lock import ingest_lock

    docs = write_corpus(tmp_path / "docs")
    env = cli_env(weaviate_settings, tmp_path)
    held = weaviate_settings.model_copy(update={"data_dir": tmp_path / "data"})
    with ingest_lock(held):  # an ingest of this collection is running
        refused = fieldguide("ingest", str(docs), "--no-wait", env=env)
        assert refused.returncode == 1 and "Another ingest of collection" in refused.stderr
        assert "Traceback" not in refused.stderr
        waiting = subprocess.Popen([sys.executable, "-m", "fieldguide.cli", "ingest", str(docs), "--json"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(8)
        assert waiting.poll() is None  # it waits for the running one
    out, err = waiting.communicate(timeout=300)
    assert waiting.returncode == 0, err
    assert "waiting: another ingest" in err and '"files_added": 4' in out


def generated_corpus(root: Path, files: int = 58, sections: int = 9) -> Path:
    """Enough chunks for several embedding rounds (512 texts each), so a kill lands between them."""
    for f in range(files):
        body = "\n\n".join(f"# Topic {f}-{s}\n\nThe {s}th setting of screen {f} controls how entries of kind "
                           f"{f * s} are grouped, sorted and shown in the list; change it under Preferences."
                           for s in range(sections))
        (root / f"page-{f:03d}.md").parent.mkdir(parents=True, exist_ok=True)
        (root / f"page-{f:03d}.md").write_text(body + "\n", encoding="utf-8")
    return root


def expected_uuids(docs: Path, settings) -> dict[str, set[str]]:
    from ingest.chunker import Chunker, iter_markdown_files

    chunker = Chunker(settings)
    return {path.relative_to(docs).as_posix(): {c.uuid for c in chunker.chunk_bytes(path.read_bytes(),
                                                path.relative_to(docs).as_posix()).chunks}
            for path in iter_markdown_files(docs)}


def count_while_created(store) -> int:
    """The collection's count, 0 while the other process is still creating it (its schema can
    exist a moment before its index does, and an aggregate then fails: as the client's own error,
    or as the store's StoreUnavailable once a node was tried again)."""
    from weaviate.exceptions import WeaviateQueryError

    from fieldguide.errors import StoreUnavailable

    try:
        return store.count()
    except (WeaviateQueryError, StoreUnavailable):
        return 0


def test_an_ingest_killed_halfway_is_completed_by_the_next_run(weaviate_settings, tmp_path, embeddings):
    from ingest.pipeline import ingest_folder

    from fieldguide.store import open_store

    docs = generated_corpus(tmp_path / "docs")
    expected_total = sum(len(v) for v in expected_uuids(docs, weaviate_settings).values())
    assert expected_total > 512  # (more than one round)
    run = subprocess.Popen([sys.executable, "-m", "fieldguide.cli", "ingest", str(docs), "--json"],
                           env=cli_env(weaviate_settings, tmp_path), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    with open_store(weaviate_settings) as store:
        deadline = time.monotonic() + 600
        while count_while_created(store) == 0:  # the first round is in: some files done, many half-written
            assert run.poll() is None and time.monotonic() < deadline, "the ingest ended before it could be killed"
            time.sleep(0.05)
        run.send_signal(signal.SIGKILL)
        run.wait()
        halfway = store.count()
        assert 0 < halfway < expected_total
        partial = store.source_counts()

        # meanwhile the folder changes: a half-written page goes, another is rewritten
        recorded = store.file_records()
        unrecorded = sorted(set(partial) - set(recorded))
        assert unrecorded, "the kill left no half-written file"
        (docs / unrecorded[0]).unlink()
        (docs / unrecorded[-1]).write_text("# Rewritten\n\nOnly this now.\n", encoding="utf-8")

        summary = ingest_folder(docs, weaviate_settings, store=store, embeddings=embeddings, progress=False)
        assert summary.files_seen == len(list(docs.glob("*.md")))

        expected = expected_uuids(docs, weaviate_settings)
        stored = {}
        for obj in store.chunks.iterator(return_properties=["source", "chunk_id"]):
            stored.setdefault(obj.properties["source"], []).append(str(obj.uuid))
        assert {s: set(u) for s, u in stored.items()} == expected  # none missing, no orphans
        assert all(len(u) == len(set(u)) for u in stored.values())  # no duplicates
        records = store.file_records()
        assert set(records) == set(expected)
        assert all(records[s]["chunk_count"] == len(expected[s]) for s in expected)  # records agree
        assert store.source_counts() == {s: len(u) for s, u in expected.items() if u}
        assert ingest_folder(docs, weaviate_settings, store=store, embeddings=embeddings,
                             progress=False).files_skipped == len(expected)  # and all is settled


def test_a_collection_holding_another_folder_is_refused_not_overwritten(weaviate_settings, tmp_path, embeddings):
    from ingest.pipeline import ingest_folder

    from fieldguide.store import open_store

    docs = write_corpus(tmp_path / "docs")
    env = cli_env(weaviate_settings, tmp_path)
    with open_store(weaviate_settings) as store:
        ingest_folder(docs, weaviate_settings, store=store, embeddings=embeddings, progress=False)
        before = store.count()
        assert store.docs_root() == str(docs.resolve())

    refused = fieldguide("ingest", str(SAMPLE_DOCS), env=env)
    assert refused.returncode == 1 and "would delete the others" in refused.stderr and "--reindex" in refused.stderr
    serve_refused = fieldguide("serve", "--docs", str(SAMPLE_DOCS), "--port", "9", env=env)
    assert serve_refused.returncode == 1 and "would delete the others" in serve_refused.stderr

    moved = tmp_path / "moved"
    docs.rename(moved)  # the same documents in another place are still theirs
    (moved / "reports.md").write_text(PAGES["reports.md"] + "\nMore.\n", encoding="utf-8")
    with open_store(weaviate_settings) as store:
        ingest_folder(moved, weaviate_settings, store=store, embeddings=embeddings, progress=False)
        assert store.count() == before and store.docs_root() == str(moved.resolve())
        ingest_folder(SAMPLE_DOCS, weaviate_settings, store=store, embeddings=embeddings, progress=False,
                      reindex=True)  # replacing it on purpose
        assert store.docs_root() == str(SAMPLE_DOCS.resolve())


def test_serve_without_a_docs_folder_ingests_nothing(weaviate_settings, tmp_path, embeddings):
    from ingest.pipeline import ingest_folder

    from fieldguide.store import open_store
    from fieldguide_testing.local_servers import free_port

    docs = write_corpus(tmp_path / "docs")
    env = cli_env(weaviate_settings, tmp_path)
    with open_store(weaviate_settings) as store:
        ingest_folder(docs, weaviate_settings, store=store, embeddings=embeddings, progress=False)
        before = sorted(store.sources())
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "fieldguide.cli", "serve", "--collection",
                               weaviate_settings.collection, "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, server.stderr.read()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        server.terminate()
        _, err = server.communicate(timeout=60)
    assert "ingested" not in err
    with open_store(weaviate_settings) as store:
        assert sorted(store.sources()) == before  # the sample docs did not replace them
