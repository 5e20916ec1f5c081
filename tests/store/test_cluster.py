"""A local cluster of three weaviate-server nodes with every object on all three: questions keep
being answered, with the same chunks, while the node the client uses is killed; changes made
meanwhile reach that node once it is back."""
from __future__ import annotations

import os
import signal
import time

import pytest

from fieldguide import weaviate_server
from fieldguide.settings import Settings
from tests.store.store_corpus import PAGES, write_corpus

pytestmark = [pytest.mark.weaviate, pytest.mark.models]

QUESTIONS = 120  # benchmarks/bench_cluster.py asks more; here the property, at a smaller scale


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, weaviate_binary):
    data = tmp_path_factory.mktemp("cluster")
    settings = Settings(data_dir=data, weaviate_url=None, weaviate_binary=weaviate_binary, local_nodes=3,
                        local_http_port=weaviate_server.free_port(), local_grpc_port=weaviate_server.free_port(),
                        replication_factor=3, consistency_level="QUORUM", collection="ClusterDocs")
    try:
        weaviate_server.start(settings)
        yield settings
    finally:
        weaviate_server.stop(settings)


def text_on_node(http_port: int, node_name: str, collection: str, uuid: str):
    """An object's text as `node_name` itself holds it (Weaviate's node_name read), or the HTTP status."""
    import httpx

    response = httpx.get(f"http://127.0.0.1:{http_port}/v1/objects/{collection}/{uuid}",
                         params={"node_name": node_name}, timeout=10)
    return response.json()["properties"]["text"] if response.status_code == 200 else response.status_code


def test_cluster_nodes_and_cli_status(cluster):
    status = weaviate_server.status(cluster)
    assert [node["name"] for node in status["cluster"]] == ["node1", "node2", "node3"]
    assert all(node["ready"] for node in status["cluster"])


def test_a_node_killed_during_questions_fails_none_and_catches_up(cluster, embeddings, tmp_path):
    from graph.graph import build_retrieval_graph
    from graph.resources import Resources
    from ingest.pipeline import ingest_folder

    from fieldguide.store import open_store

    docs = write_corpus(tmp_path / "docs")
    with open_store(cluster) as store:
        ingest_folder(docs, cluster, store=store, embeddings=embeddings, progress=False)
        resources = Resources(cluster, store=store, embeddings=embeddings)
        retrieval = build_retrieval_graph()
        config = {"configurable": {"resources": resources}}
        records = store.chunks.query.fetch_objects(limit=100, return_properties=["heading_path"]).objects
        questions = sorted({"What is " + " ".join(r.properties["heading_path"]) + "?" for r in records})
        uuids_before = {str(r.uuid) for r in records}

        def ask(question: str) -> list[str]:
            return [block["chunk_id"] for block in retrieval.invoke({"question": question}, config)["context"]]

        expected = {q: ask(q) for q in questions}
        assert sum(map(bool, expected.values())) >= len(questions) - 1  # (a title-only question may abstain)

        failures, answered, killed, used = [], 0, None, None
        for n in range(QUESTIONS):
            if n == QUESTIONS // 3:  # kill the very node the client is talking to
                used = store.nodes.node.http_port
                killed = next(node for node in weaviate_server.cluster_nodes(cluster) if node["http_port"] == used)
                os.kill(killed["pid"], signal.SIGKILL)
            if n == 2 * QUESTIONS // 3:  # while it is down: a page changes and one goes (quorum writes: 2 of 3)
                (docs / "reports.md").write_text(PAGES["reports.md"] + "\n## Budget report\n\nMonthly totals.\n")
                (docs / "reconcile.md").unlink()
                ingest_folder(docs, cluster, store=store, embeddings=embeddings, progress=False)
                expected = {q: ask(q) for q in questions}
            question = questions[n % len(questions)]
            try:
                if ask(question) != expected[question]:
                    failures.append((n, question, "different chunks"))
                answered += 1
            except Exception as exc:  # a failed question is exactly what must not happen
                failures.append((n, question, repr(exc)))
        assert answered == QUESTIONS and failures == []
        assert store.nodes.node.http_port != used  # it did fail over
        now = {str(o.uuid): o.properties["text"] for o in store.chunks.query.fetch_objects(limit=100).objects}
        deleted = uuids_before - set(now)
        assert deleted and any("Budget report" in text for text in now.values())  # (quorum writes: 2 of 3)

        weaviate_server.start(cluster)  # the killed node comes back where it was, with its data
        ask(questions[0])
        serving = store.nodes.node.http_port
        deadline = time.monotonic() + 180  # Weaviate's async replication compares replicas every 30 s or so
        while True:
            missing = [u for u, text in now.items() if text_on_node(serving, killed["name"], store.name, u) != text]
            kept = [u for u in deleted if text_on_node(serving, killed["name"], store.name, u) != 404]
            if not missing and not kept:
                break
            assert time.monotonic() < deadline, f"{killed['name']} did not catch up: {missing} missing, {kept} kept"
            time.sleep(2)
