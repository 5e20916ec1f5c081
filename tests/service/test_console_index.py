"""The console's charts that read the index as well as the stored turns: the top gap clusters with
their file#heading tasks, and the stale answers. A real Weaviate holding the sample docs, the
packaged embedding model, turns fed through the app's own state store."""
from __future__ import annotations

import csv
import io

import httpx
import pytest
from pydantic import SecretStr

from fieldguide.freshness import index_version, text_digest
from fieldguide.service import create_app
from fieldguide_testing.scripted_graph import build_scripted_graph
from fieldguide_testing.serving import fresh_sqlite_url, serve
from tests.conftest import ingested_collection
from tests.service.test_console import AUTH, TOKEN, midnight

pytestmark = [pytest.mark.weaviate, pytest.mark.models]

FIELDS = ["Booking form", "Fields"]
DISLIKED = ["Which fields does the booking form have?", "What fields are on the booking form?",
            "Which fields are in the booking form?"]
MISSING = ["How do I run payroll for my employees?", "Can the app pay my staff their wages?"]


@pytest.fixture(scope="module")
def index(weaviate_service, tmp_path_factory, embeddings):
    with ingested_collection(weaviate_service, tmp_path_factory.mktemp("console-data"), embeddings,
                             prefix="Console") as settings:
        yield settings


@pytest.fixture
def console_app(index, embeddings):
    from graph.resources import Resources

    settings = index.model_copy(update={"state_url": fresh_sqlite_url(), "console_token": SecretStr(TOKEN)})
    resources = Resources(settings, embeddings=embeddings)
    app = create_app(settings, build_scripted_graph, readiness=lambda: None, configurable={"resources": resources})
    yield app, resources
    resources.close()


def test_the_gap_chart_lists_the_top_clusters_with_their_tasks(console_app):
    app, _ = console_app
    turns = app.state.service.state.turns
    at = midnight(1)
    for n, question in enumerate(DISLIKED):
        record = turns.start(f"d{n}", question, started_at=at + n)
        turns.finish(record.finish("done", {"abstain": False, "answer": "The form has a Boat field [1].",
                                            "citations": [{"n": 1, "source": "screens/booking-form.md",
                                                           "heading_path": FIELDS}]}))
        turns.add_feedback(f"d{n}", 1, "down", "it missed the Skipper field", at=at + 100 + n)
    for n, question in enumerate(MISSING):
        record = turns.start(f"m{n}", question, started_at=at + 10 + n)
        turns.finish(record.finish("done", {"abstain": True, "answer": "The documentation does not cover this."}))
    fine = turns.start("ok", "How do I add a boat?", started_at=at + 20)
    turns.finish(fine.finish("done", {"abstain": False, "answer": "Open the fleet list."}))
    turns.add_feedback("ok", 1, "up", at=at + 30)
    with serve(app) as base, httpx.Client(timeout=120, headers=AUTH) as client:
        body = client.get(f"{base}/console/api/gaps", params={"days": 3}).json()
        exported = client.get(f"{base}/console/api/gaps.csv", params={"days": 3}).text
        top1 = client.get(f"{base}/console/api/gaps", params={"days": 3, "top": 1}).json()
    assert (body["turns"], body["problem_turns"]) == (6, 5)
    disliked, missing = body["clusters"]
    assert (disliked["kind"], disliked["count"], sorted(disliked["questions"])) == ("disliked", 3, sorted(DISLIKED))
    assert disliked["tasks"] == ["screens/booking-form.md#Booking form > Fields"]
    assert (missing["kind"], missing["count"], sorted(missing["questions"])) == ("missing", 2, sorted(MISSING))
    assert missing["action"].startswith("Write a section")
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert [(r["kind"], int(r["count"])) for r in rows] == [("disliked", 3), ("missing", 2)]
    assert rows[0]["tasks"] == "screens/booking-form.md#Booking form > Fields"
    assert [c["kind"] for c in top1["clusters"]] == ["disliked"]


def test_the_stale_chart_counts_answers_whose_sections_changed_or_went(console_app, embeddings):
    app, resources = console_app
    store = resources.store
    current = index_version(store.file_records())
    hit = store.near_vector(embeddings.embed_query("Which fields does the booking form have?"), k=1)[0]
    cited = {"chunk_id": hit["chunk_id"], "source": hit["source"], "heading_path": hit["heading_path"]}
    unchanged = {**cited, "digest": text_digest(store.texts([hit["chunk_id"]])[hit["chunk_id"]])}
    gone = {"chunk_id": "concepts/removed.md#gone", "source": "concepts/removed.md", "heading_path": ["Removed"],
            "digest": "0" * 16}
    turns = app.state.service.state.turns
    at = midnight(1)
    seeded = [("changed", "old-version", [{**cited, "digest": "0" * 16}], False),
              ("disappeared", "old-version", [unchanged, gone], False),
              ("same text", "old-version", [unchanged], False),
              ("same version", current, [{**cited, "digest": "0" * 16}], False),
              ("abstained", "old-version", [{**cited, "digest": "0" * 16}], True)]
    for n, (question, version, sections, abstain) in enumerate(seeded):
        record = turns.start(f"s{n}", question, started_at=at + n)
        turns.finish(record.finish("done", {"abstain": abstain, "answer": "…", "index_version": version,
                                            "sections": sections}))
    with serve(app) as base, httpx.Client(timeout=120, headers=AUTH) as client:
        body = client.get(f"{base}/console/api/stale", params={"days": 3}).json()
        exported = client.get(f"{base}/console/api/stale.csv", params={"days": 3}).text
    assert body["index_version"] == current
    assert [(a["question"], [(s["source"], s["change"]) for s in a["sections"]]) for a in body["answers"]] == [
        ("changed", [(hit["source"], "changed")]), ("disappeared", [("concepts/removed.md", "disappeared")])]
    assert body["by_source"] == sorted([{"source": hit["source"], "answers": 1},
                                        {"source": "concepts/removed.md", "answers": 1}], key=lambda r: r["source"])
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert [(r["question"], r["change"]) for r in rows] == [("changed", "changed"), ("disappeared", "disappeared")]
    assert rows[1]["section"] == "concepts/removed.md#Removed"
