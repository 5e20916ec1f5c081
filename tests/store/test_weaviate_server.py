"""The locally managed server: found, shared between processes, persistent, stoppable."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fieldguide import weaviate_server
from fieldguide.settings import Settings


def test_binary_search_order(tmp_path, monkeypatch):
    data_bin = tmp_path / "data" / "bin"
    go_bin = tmp_path / "gopath" / "bin"
    for directory in (data_bin, go_bin):
        directory.mkdir(parents=True)
        (directory / "weaviate-server").write_text("#!/bin/sh\n")
        (directory / "weaviate-server").chmod(0o755)
    monkeypatch.setenv("GOBIN", str(go_bin))
    settings = Settings(data_dir=tmp_path / "data", weaviate_binary=None)
    assert weaviate_server.find_binary(settings) == data_bin / "weaviate-server"
    (data_bin / "weaviate-server").unlink()
    assert weaviate_server.find_binary(settings) == go_bin / "weaviate-server"
    explicit = Settings(data_dir=tmp_path / "data", weaviate_binary=go_bin / "weaviate-server")
    assert weaviate_server.find_binary(explicit) == go_bin / "weaviate-server"


def test_configured_binary_that_does_not_exist_is_refused(tmp_path):
    from fieldguide.errors import StoreUnavailable

    settings = Settings(data_dir=tmp_path, weaviate_binary=tmp_path / "nope")
    with pytest.raises(StoreUnavailable, match="FIELDGUIDE_WEAVIATE_BINARY"):
        weaviate_server.find_binary(settings)


@pytest.mark.weaviate
def test_two_processes_share_one_server_that_survives_a_restart(tmp_path, weaviate_binary):
    env = dict(os.environ, FIELDGUIDE_DATA_DIR=str(tmp_path / "data"), FIELDGUIDE_WEAVIATE_BINARY=str(weaviate_binary),
               FIELDGUIDE_LOCAL_HTTP_PORT=str(weaviate_server.free_port()),
               FIELDGUIDE_LOCAL_GRPC_PORT=str(weaviate_server.free_port()))
    env.pop("FIELDGUIDE_WEAVIATE_URL", None)
    settings = Settings(data_dir=Path(env["FIELDGUIDE_DATA_DIR"]), weaviate_url=None, weaviate_binary=weaviate_binary,
                        local_http_port=int(env["FIELDGUIDE_LOCAL_HTTP_PORT"]),
                        local_grpc_port=int(env["FIELDGUIDE_LOCAL_GRPC_PORT"]))
    command = [sys.executable, "-m", "fieldguide.cli", "weaviate", "start"]
    try:
        starters = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for _ in range(2)]
        outputs = [p.communicate(timeout=180) for p in starters]
        assert [p.returncode for p in starters] == [0, 0], outputs
        pids = {json.loads(out)["pid"] for out, _ in outputs}
        assert len(pids) == 1  # both got the same server

        from fieldguide.store import open_store

        with open_store(settings, collection="Persisted") as store:
            store.ensure_collections()
            store.set_manifest("m", 3, "1", "onnx-none")
        assert weaviate_server.stop(settings)
        assert not weaviate_server.is_ready(settings.local_http_port)

        with open_store(settings, collection="Persisted") as store:  # starts it again
            assert store.manifest() == {"embedding_model": "m", "dimension": 3, "chunker_version": "1",
                                        "embedding_backend": "onnx-none",
                                        "calibration": None, "query_prompt": None, "passage_prompt": None,
                                        "ingest_stamp": None, "docs_dialect": None}
        status = weaviate_server.status(settings)
        assert status["ready"] and status["pid"] not in pids
    finally:
        weaviate_server.stop(settings)


def test_a_cluster_port_taken_before_the_server_binds_it_gets_fresh_ports(tmp_path, weaviate_binary, monkeypatch):
    """The cluster ports are free when chosen, and another process may bind one before the server
    does: the server exits with "address already in use", and the start tries fresh ports."""
    import socket

    settings = Settings(data_dir=tmp_path / "data", weaviate_url=None, weaviate_binary=weaviate_binary,
                        local_http_port=weaviate_server.free_port(), local_grpc_port=weaviate_server.free_port())
    taken = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)  # every address, both families
    taken.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    taken.bind(("::", 0))
    taken.listen()
    busy = taken.getsockname()[1]
    real = weaviate_server._consecutive_free_ports
    handed = []

    def first_one_taken():
        handed.append(busy if not handed else real())
        return handed[-1]

    monkeypatch.setattr(weaviate_server, "_consecutive_free_ports", first_one_taken)
    try:
        state = weaviate_server.start(settings)
        assert weaviate_server.is_ready(settings.local_http_port)
        assert handed[0] == busy and state["gossip_port"] != busy  # the second start's ports
        assert b"address already in use" in weaviate_server.ServerPaths(tmp_path / "data").log.read_bytes()
    finally:
        weaviate_server.stop(settings)
        taken.close()
