"""`langgraph dev` serves the compiled graph and runs it (LangGraph Studio's server).

langgraph-cli[inmem] lives in its own environment, `.venv-studio` (built by
scripts/setup-studio.sh), because its grpcio clashes with weaviate-client's. The server
runs from the repository root exactly as a user starts it, reads langgraph.json, and
talks to the test run's Weaviate. The collection holds one small section and the run
asks for a rerank score no chunk can reach (a declared option, sent as `configurable`), so
the turn abstains without loading the chat model while every node, the store query and
the per-request config are exercised.

Without `.venv-studio` the test is skipped, or fails when CI is set;
FIELDGUIDE_STUDIO_TESTS=0 leaves it out on purpose.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import missing

pytestmark = [pytest.mark.studio, pytest.mark.weaviate, pytest.mark.models]

REPO = Path(__file__).resolve().parents[2]
LANGGRAPH = REPO / ".venv-studio" / "bin" / "langgraph"
HOST = "127.0.0.1"
NODES = ["condense", "route", "embed", "search", "threshold", "rerank", "weigh_intent", "cap", "reassemble",
         "evidence", "prompt", "generate"]
STARTUP_SECONDS = 120
RUN_SECONDS = 240  # the server loads the embedding model on the first run
DOC = "# Budget categories\n\n## Rename a category\n\nOpen the category menu and choose **Rename**.\n"


@pytest.fixture
def langgraph_cli() -> Path:
    if os.environ.get("FIELDGUIDE_STUDIO_TESTS") == "0":
        pytest.skip("FIELDGUIDE_STUDIO_TESTS=0: the studio environment was left out on purpose")
    if not LANGGRAPH.exists():
        missing(f"{LANGGRAPH.relative_to(REPO)} is missing: run scripts/setup-studio.sh")
    return LANGGRAPH


@pytest.fixture
def tiny_collection(tmp_path, weaviate_settings, embeddings):
    from ingest.pipeline import ingest_folder

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "categories.md").write_text(DOC, encoding="utf-8")
    ingest_folder(docs, weaviate_settings, progress=False, embeddings=embeddings)
    return weaviate_settings


@pytest.fixture
def studio_server(langgraph_cli, tiny_collection, tmp_path):
    """Base URL of a running `langgraph dev`; the whole process group is killed afterwards."""
    from fieldguide.weaviate_server import free_port

    settings = tiny_collection
    port = free_port()
    env = {name: value for name, value in os.environ.items()
           if name not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update({
        "LANGGRAPH_NO_VERSION_CHECK": "true", "DISABLE_TELEMETRY": "true", "LANGSMITH_TRACING": "false",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "FIELDGUIDE_WEAVIATE_URL": settings.weaviate_url,
        "FIELDGUIDE_WEAVIATE_GRPC_PORT": str(settings.weaviate_grpc_port),
        "FIELDGUIDE_COLLECTION": settings.collection,
        "FIELDGUIDE_DATA_DIR": str(settings.data_dir),
    })
    log_path = tmp_path / "langgraph-dev.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(langgraph_cli), "dev", "--no-browser", "--no-reload", "--host", HOST, "--port", str(port)],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)

    def log_tail() -> str:
        return log_path.read_text(encoding="utf-8", errors="replace")[-4000:]

    base_url = f"http://{HOST}:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"langgraph dev exited with {process.returncode}:\n{log_tail()}")
            try:
                if httpx.get(f"{base_url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev did not answer /ok within {STARTUP_SECONDS}s:\n{log_tail()}")
            time.sleep(0.5)
        yield base_url, log_tail
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)


def test_langgraph_dev_serves_and_runs_the_graph(studio_server, tiny_collection):
    base_url, log_tail = studio_server
    with httpx.Client(base_url=base_url, timeout=30) as client:
        found = client.post("/assistants/search", json={"graph_id": "fieldguide", "limit": 10})
        assert found.status_code == 200, found.text
        assistants = [a for a in found.json() if a["graph_id"] == "fieldguide"]
        assert assistants, found.json()
        assistant_id = assistants[0]["assistant_id"]

        drawn = client.get(f"/assistants/{assistant_id}/graph")
        assert drawn.status_code == 200, drawn.text
        node_ids = {node["id"] for node in drawn.json()["nodes"]}
        assert set(NODES) <= node_ids, node_ids

        thread = client.post("/threads", json={})
        assert thread.status_code == 200, thread.text
        thread_id = thread.json()["thread_id"]

        # Studio's forms come from the declared options: bounds and descriptions included.
        schemas = client.get(f"/assistants/{assistant_id}/schemas")
        assert schemas.status_code == 200, schemas.text
        context_schema = schemas.json()["context_schema"]
        assert {"rerank_min", "max_chunks", "max_answer_tokens"} <= set(context_schema["properties"])

        # No rerank score reaches 1000, so the one stored section is found but capped away.
        run = client.post(f"/threads/{thread_id}/runs/wait", timeout=RUN_SECONDS, json={
            "assistant_id": assistant_id,
            "input": {"question": "How do I rename a category?"},
            "config": {"configurable": {"rerank_min": 1000}},
        })
        # docs/architecture.md's stateless call (LangGraph Studio), with the graph id standing for its assistant.
        stateless = client.post("/runs/wait", timeout=RUN_SECONDS, json={
            "assistant_id": "fieldguide", "input": {"question": "How do I rename a category?"},
            "config": {"configurable": {"rerank_min": 1000}},
        })
    assert stateless.status_code == 200, f"{stateless.text}\n{log_tail()}"
    assert stateless.json().get("abstain") is True, stateless.json()
    assert run.status_code == 200, f"{run.text}\n{log_tail()}"
    final = run.json()
    assert "__error__" not in final, f"{final}\n{log_tail()}"
    assert final["abstain"] is True
    assert final["answer"].startswith("The documentation does not cover this question")
    assert [n["source"] for n in final["nearest"]] == ["categories.md"]
    assert "Budget categories" in final["answer"]  # the nearest section is named
    assert len(final["stages"]["search"]) == 1 and len(final["stages"]["threshold"]) == 1
    assert final["stages"]["cap"] == []
    assert final["context"] == []
