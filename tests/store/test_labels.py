"""Doc sets (labels) in one collection: each ingest touches only its own set, and a question
limited to a set sees only that set's chunks (two versions of the same docs: same files, same
headings, different facts)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fieldguide.errors import FieldguideError
from labelled_corpus import write_version

pytestmark = [pytest.mark.weaviate, pytest.mark.models]


def snapshot(store, label):
    """chunk_id -> (label, source, text) of one doc set's stored chunks."""
    return {c["chunk_id"]: (c.get("label"), c["source"], c["text"]) for c in store.iter_chunks([label])}


@pytest.fixture
def two_versions(weaviate_settings, embeddings, tmp_path):
    """(settings, folders) with v1 and v2 ingested into one collection."""
    from ingest.pipeline import ingest_folder

    folders = {version: write_version(tmp_path / version, version) for version in ("v1", "v2")}
    for version, folder in folders.items():
        summary = ingest_folder(folder, weaviate_settings, progress=False, embeddings=embeddings, label=version)
        assert summary.files_added == 3
    return weaviate_settings, folders


def test_labelled_sets_live_side_by_side_and_an_ingest_touches_only_its_own(two_versions, embeddings, tmp_path):
    from fieldguide.store import open_store
    from ingest.pipeline import ingest_folder

    settings, folders = two_versions
    with open_store(settings) as store:
        assert set(store.known_labels()) == {"v1", "v2"}
        assert store.known_labels()["v1"] == str(folders["v1"].resolve())
        v1 = snapshot(store, "v1")
        v2 = snapshot(store, "v2")
        # the same files and headings, yet no id is shared: both sets are whole
        assert len(v1) == len(v2) >= 3 and not set(v1) & set(v2)
        assert store.for_label("v1").file_records().keys() == {"accounts.md", "export.md", "sync.md"}
        assert store.for_label(None).file_records() == {}  # no unnamed set yet
        assert store.for_label("v2").docs_root() == str(folders["v2"].resolve())

        # v2 changes a page and loses another: v1 is left exactly as it was
        (folders["v2"] / "sync.md").unlink()
        (folders["v2"] / "export.md").write_text("# Exporting data\n\nExports moved to the Data page.\n")
        summary = ingest_folder(folders["v2"], settings, progress=False, embeddings=embeddings, label="v2")
        assert (summary.files_changed, summary.files_deleted, summary.files_skipped) == (1, 1, 1)
        assert snapshot(store, "v1") == v1
        assert {source for _, source, _ in snapshot(store, "v2").values()} == {"accounts.md", "export.md"}

        # the unnamed set comes and goes beside them without touching either
        unnamed = write_version(tmp_path / "unnamed", "v1")
        ingest_folder(unnamed, settings, progress=False, embeddings=embeddings)
        assert snapshot(store, "v1") == v1 and len(snapshot(store, "")) == len(v1)
        (unnamed / "accounts.md").unlink()
        ingest_folder(unnamed, settings, progress=False, embeddings=embeddings)
        assert snapshot(store, "v1") == v1
        assert {source for _, source, _ in snapshot(store, "").values()} == {"export.md", "sync.md"}
        unnamed_chunks = snapshot(store, "")
        v2 = snapshot(store, "v2")

        # rebuilding one set rebuilds that set only
        summary = ingest_folder(folders["v1"], settings, progress=False, embeddings=embeddings, label="v1",
                                reindex=True)
        assert summary.files_added == 3 and summary.chunks_deleted == len(v1)
        assert snapshot(store, "v1") == v1 and snapshot(store, "v2") == v2 and snapshot(store, "") == unnamed_chunks

        # a label's folder is mirrored per label: another folder under v1 is refused, nothing deleted
        other = tmp_path / "other"
        other.mkdir()
        (other / "elsewhere.md").write_text("# Elsewhere\n\nSomething else entirely.\n")
        with pytest.raises(FieldguideError, match="Doc set v1"):
            ingest_folder(other, settings, progress=False, embeddings=embeddings, label="v1")
        assert snapshot(store, "v1") == v1

        # each set has its own calibration, measured on its own chunks
        assert store.label_calibration("v1")["chunks"] == len(v1)
        assert store.label_calibration("v2")["chunks"] == len(v2)


@pytest.mark.parametrize("question", [
    "How do I export to CSV?", "What happens in a sync conflict?", "How do I close an account?",
    "Can exports be scheduled?"])
def test_a_question_limited_to_one_label_retrieves_only_that_labels_chunks(two_versions, question):
    from fieldguide.retrieval import open_resources, retrieve
    from graph.graph import build_retrieval_graph

    settings, _ = two_versions
    graph = build_retrieval_graph()
    with open_resources(settings) as resources:
        everything, _ = retrieve(graph, question, resources)
        assert {b.get("label") for b in everything["search_results"]} == {"v1", "v2"}
        for label in ("v1", "v2"):
            state, _ = retrieve(graph, question, resources, {"labels": [label]})
            assert state["search_results"] and {c.get("label") for c in state["search_results"]} == {label}
            assert state["context"] and {b.get("label") for b in state["context"]} == {label}


def test_the_cli_limits_with_label_and_fieldguide_labels_and_refuses_an_unknown_label(two_versions, tmp_path):
    settings, _ = two_versions
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "What happens in a sync conflict?"}) + "\n")
    env = dict(os.environ, FIELDGUIDE_COLLECTION=settings.collection, FIELDGUIDE_DATA_DIR=str(tmp_path / "data"),
               FIELDGUIDE_WEAVIATE_URL=settings.weaviate_url,
               FIELDGUIDE_WEAVIATE_GRPC_PORT=str(settings.weaviate_grpc_port))

    def retrieve(*args, **extra):
        return subprocess.run([sys.executable, "-m", "fieldguide.cli", "retrieve", "--batch", str(questions), *args],
                              env={**env, **extra}, capture_output=True, text=True, timeout=300)

    by_flag = retrieve("--label", "v2")
    assert by_flag.returncode == 0, by_flag.stderr
    assert {b["label"] for b in json.loads(by_flag.stdout)["context"]} == {"v2"}
    by_setting = retrieve(FIELDGUIDE_LABELS="v1")
    assert by_setting.returncode == 0, by_setting.stderr
    assert {b["label"] for b in json.loads(by_setting.stdout)["context"]} == {"v1"}
    unknown = retrieve("--label", "v3")
    assert unknown.returncode == 1 and "unknown label 'v3'" in unknown.stderr and not unknown.stdout
    bad = retrieve("--label", "no spaces allowed")
    assert bad.returncode == 2 and "invalid label" in bad.stderr


def test_a_config_file_ingests_each_folder_under_its_label(weaviate_settings, tmp_path):
    from fieldguide.store import open_store

    for version in ("v1", "v2"):
        write_version(tmp_path / "docs" / version, version)
    config = tmp_path / "docsets.toml"
    config.write_text('[[docset]]\nlabel = "v1"\nfolder = "docs/v1"\n\n[[docset]]\nlabel = "v2"\nfolder = "docs/v2"\n')
    env = dict(os.environ, FIELDGUIDE_COLLECTION=weaviate_settings.collection,
               FIELDGUIDE_DATA_DIR=str(tmp_path / "data"), FIELDGUIDE_WEAVIATE_URL=weaviate_settings.weaviate_url,
               FIELDGUIDE_WEAVIATE_GRPC_PORT=str(weaviate_settings.weaviate_grpc_port))
    done = subprocess.run([sys.executable, "-m", "fieldguide.cli", "ingest", "--config", str(config), "--json"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summaries = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(s["label"], s["files_added"]) for s in summaries] == [("v1", 3), ("v2", 3)]
    with open_store(weaviate_settings) as store:
        assert store.known_labels() == {"v1": str((tmp_path / "docs" / "v1").resolve()),
                                        "v2": str((tmp_path / "docs" / "v2").resolve())}
    config.write_text('[[docset]]\nlabel = "v1"\nfolder = "docs/v1"\n\n[[docset]]\nlabel = "v1"\nfolder = "docs/v2"\n')
    twice = subprocess.run([sys.executable, "-m", "fieldguide.cli", "ingest", "--config", str(config)],
                           env=env, capture_output=True, text=True, timeout=300)
    assert twice.returncode == 1 and "listed twice" in twice.stderr
