"""The CLI against a real, an unreachable and a missing Weaviate: clear errors, never tracebacks."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from store_corpus import write_corpus


def _fieldguide(*args, env_update: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, **env_update)
    for name, value in list(env_update.items()):
        if value is None:
            env.pop(name)
    return subprocess.run([sys.executable, "-m", "fieldguide.cli", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_unreachable_weaviate_is_a_clear_error(tmp_path):
    from fieldguide.weaviate_server import free_port

    docs = write_corpus(tmp_path / "docs")
    port = free_port()  # nothing listens there
    result = _fieldguide("ingest", str(docs), "--json", env_update={
        "FIELDGUIDE_WEAVIATE_URL": f"http://127.0.0.1:{port}", "FIELDGUIDE_WEAVIATE_GRPC_PORT": str(free_port())})
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"127.0.0.1:{port}" in result.stderr and "FIELDGUIDE_WEAVIATE_URL" in result.stderr
    assert result.stdout == ""


def test_no_local_binary_is_a_clear_error(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    result = _fieldguide("ingest", str(docs), env_update={
        "FIELDGUIDE_WEAVIATE_URL": None, "FIELDGUIDE_DATA_DIR": str(tmp_path / "data"),
        "FIELDGUIDE_WEAVIATE_BINARY": str(tmp_path / "missing" / "weaviate-server"),
        "FIELDGUIDE_LOCAL_HTTP_PORT": "1"})  # a privileged port nobody on loopback answers on
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "FIELDGUIDE_WEAVIATE_BINARY" in result.stderr or "fieldguide weaviate build" in result.stderr


@pytest.mark.weaviate
@pytest.mark.models
def test_cli_ingest_json_summary_and_model_refusal(tmp_path, weaviate_settings):
    docs = write_corpus(tmp_path / "docs")
    env = {"FIELDGUIDE_COLLECTION": weaviate_settings.collection}
    first = _fieldguide("ingest", str(docs), "--json", env_update=env)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout.strip().splitlines()[-1])
    assert list(summary) == ["files_seen", "files_skipped", "files_changed", "files_added", "files_deleted",
                             "chunks_written", "chunks_deleted", "texts_embedded", "seconds", "calibration"]
    assert all(isinstance(summary[k], int) for k in summary if k not in ("seconds", "calibration"))
    assert summary["files_added"] == 4 and summary["chunks_written"] == summary["texts_embedded"] > 0
    calibration = summary["calibration"]  # the extra key beside the contract's counts
    assert calibration["scorer"].startswith("lexical-fallback") and calibration["chunks"] == summary["chunks_written"]
    assert calibration["probes"] == 30 and calibration["abstain_margin"] > 0 and 0 < calibration["screen_share"] < 1

    again = _fieldguide("ingest", str(docs), "--json", env_update=env)  # unchanged: the stored calibration
    assert json.loads(again.stdout.strip().splitlines()[-1])["calibration"] == calibration

    refused = _fieldguide("ingest", str(docs), "--json", "--collection", weaviate_settings.collection,
                          env_update={"FIELDGUIDE_EMBEDDING_MODEL": "sentence-transformers/paraphrase-MiniLM-L3-v2"})
    assert refused.returncode != 0
    assert "--reindex" in refused.stderr and "Traceback" not in refused.stderr
