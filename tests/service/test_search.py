"""Instant search, doc set labels and llms.txt over HTTP, on a real index in a real Weaviate:
the sample docs (the unnamed set) beside two labelled versions of another product's docs."""
from __future__ import annotations

import asyncio
import re
import uuid
from urllib.parse import quote

import httpx
import pytest

from fieldguide_testing.serving import SAMPLE_DOCS, fresh_sqlite_url, serve
from tests.service.sse import iter_sse

pytestmark = [pytest.mark.weaviate, pytest.mark.models]

EMBED_PAGE = ("# Embedding the launcher\n\nPaste <script src=\"launcher.js\"></script> into the page & the "
              "<b>launcher</b> button appears; the embed code is one line.\n")


@pytest.fixture(scope="module")
def indexed(weaviate_service, embeddings, tmp_path_factory):
    """(settings, folders): sample docs unnamed, v1 and v2 labelled, in one collection."""
    from fieldguide.settings import Settings
    from fieldguide.store import ChunkStore, connect
    from ingest.pipeline import ingest_folder
    from tests.store.labelled_corpus import write_version

    root = tmp_path_factory.mktemp("labelled")
    folders = {version: write_version(root / version, version) for version in ("v1", "v2")}
    (folders["v2"] / "embed.md").write_text(EMBED_PAGE, encoding="utf-8")
    settings = Settings(weaviate_url=weaviate_service["url"], weaviate_grpc_port=weaviate_service["grpc_port"],
                        collection="Search" + uuid.uuid4().hex[:10], data_dir=root / "data", docs_dir=SAMPLE_DOCS,
                        state_url=fresh_sqlite_url(), max_answer_tokens=24)
    ingest_folder(SAMPLE_DOCS, settings, progress=False, embeddings=embeddings)
    for version, folder in folders.items():
        ingest_folder(folder, settings, progress=False, embeddings=embeddings, label=version)
    try:
        yield settings, folders
    finally:
        client = connect(settings)
        try:
            ChunkStore(client, settings.collection).drop()
        finally:
            client.close()


@pytest.fixture(scope="module")
def served(indexed):
    """(base URL, app) of the real service over the index."""
    from fieldguide.service import create_app

    settings, _ = indexed
    app = create_app(settings)
    with serve(app) as url:
        yield url, app


@pytest.fixture(scope="module")
def base(served):
    return served[0]


def search(base, q, **params):
    return httpx.get(base + "/search", params={"q": q, **params}, timeout=60)


def test_search_lists_ranked_sections_with_a_highlighted_snippet(base):
    response = search(base, "booking form fields")
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    results = response.json()["results"]
    assert results and all(set(r) == {"source", "heading_path", "title", "snippet", "url", "score", "label"}
                           for r in results)
    top = results[0]
    assert top["source"] == "screens/booking-form.md" and top["label"] is None
    assert top["heading_path"][0] == "Booking form" and top["title"] == top["heading_path"][-1]
    assert top["url"].startswith("/docs-assets/screens/booking-form.md#L")
    assert "<mark>" in top["snippet"]
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    sections = [(r["label"], r["source"], tuple(r["heading_path"])) for r in results]
    assert len(sections) == len(set(sections))  # one result per section
    assert len(search(base, "booking form fields", limit=2).json()["results"]) == 2


def test_snippets_are_escaped_html_with_only_marks_added(base):
    results = search(base, "embed code launcher", label="v2").json()["results"]
    snippet = results[0]["snippet"]
    assert results[0]["source"] == "embed.md"
    assert "&lt;script" in snippet and "<script" not in snippet and "&lt;b&gt;" in snippet and "&amp;" in snippet
    assert re.sub(r"</?mark>", "", snippet).count("<") == 0
    assert "<mark>embed</mark>" in snippet.lower() or "<mark>launcher</mark>" in snippet.lower()


def test_an_unfinished_last_word_is_completed_from_the_index(base):
    typed = search(base, "booking fo").json()["results"]
    assert typed[0]["source"] == "screens/booking-form.md"
    assert "<mark>fo" in typed[0]["snippet"].lower()  # the fragment is marked where it starts a word
    scheduled = search(base, "scheduled exp", label="v2").json()["results"]
    assert (scheduled[0]["source"], scheduled[0]["label"]) == ("export.md", "v2")
    assert "<mark>scheduled</mark> <mark>exports</mark>" in scheduled[0]["snippet"].lower()


@pytest.mark.parametrize("params", [
    {}, {"q": ""}, {"q": "   "}, {"q": "x" * 301}, {"q": "export", "limit": 0}, {"q": "export", "limit": 51},
    {"q": "export", "label": "v3"}, {"q": "export", "label": "not a label!"}])
def test_bad_searches_are_refused_with_422(base, params):
    response = httpx.get(base + "/search", params=params, timeout=60)
    assert response.status_code == 422, response.text
    assert response.json()["detail"]


def test_a_search_limited_to_a_label_finds_only_that_doc_set_and_links_to_its_files(base, indexed):
    _, folders = indexed
    both = search(base, "export to CSV").json()["results"]
    assert {"v1", "v2"} <= {r["label"] for r in both}
    for label in ("v1", "v2"):
        results = search(base, "export to CSV", label=label).json()["results"]
        assert results and {r["label"] for r in results} == {label}
        assert results[0]["url"].startswith(f"/docs-assets/@{label}/export.md#L")
        served = httpx.get(base + results[0]["url"].split("#")[0], timeout=30)
        assert served.status_code == 200 and served.text == (folders[label] / "export.md").read_text()
    assert httpx.get(base + "/labels", timeout=30).json() == {"labels": ["v1", "v2"], "default": []}


def test_mcp_search_docs_ranks_as_search_does(base):
    from mcp import Client

    async def hits(query, labels=None):
        async with Client(base + "/mcp") as client:
            arguments = {"query": query, "k": 5, **({"labels": labels} if labels else {})}
            result = await client.call_tool("search_docs", arguments)
            assert result.is_error is False, result
            return result.structured_content["hits"]

    for query, labels in [("booking form fields", None), ("price of a booking", None),
                          ("sync conflict", ["v2"]), ("close an account", ["v1"])]:
        tool = asyncio.run(hits(query, labels))
        params = {"limit": 20, **({"label": labels[0]} if labels else {})}
        listed = [(r["label"], r["source"], tuple(r["heading_path"])) for r in search(base, query, **params).json()["results"]]
        sections = list(dict.fromkeys((h["label"], h["source"], tuple(h["breadcrumb"].split(" › "))) for h in tool))
        assert tool and sections[0] == listed[0], (query, sections, listed)
        positions = [listed.index(s) for s in sections]
        assert positions == sorted(positions), (query, sections, listed)
        if labels:
            assert {h["label"] for h in tool} == set(labels)

    async def unknown():
        async with Client(base + "/mcp") as client:
            return await client.call_tool("search_docs", {"query": "export", "labels": ["v9"]})
    refused = asyncio.run(unknown())
    assert refused.is_error and "unknown label 'v9'" in refused.content[0].text


def test_a_conversation_limited_to_a_label_cites_only_that_label(base):
    with httpx.Client(timeout=300) as client:
        refused = client.post(base + "/conversations", json={"question": "How do I export?", "labels": ["v9"]})
        assert refused.status_code == 422 and "unknown label 'v9'" in refused.text
        assert client.post(base + "/conversations", json={"question": "x?", "labels": ["a b"]}).status_code == 422
        for label in ("v1", "v2"):
            started = client.post(base + "/conversations",
                                  json={"question": "How do I export to CSV?", "labels": [label]})
            assert started.status_code == 202
            with client.stream("GET", base + started.json()["stream_url"]) as response:
                events = list(iter_sse(response))
            assert events[-1].event == "done", events[-1]
            (sources,) = [e.json["sources"] for e in events if e.event == "sources"]
            assert sources and {s.get("label") for s in sources} == {label}
            assert all(s["url"].startswith(f"/docs-assets/@{label}/") for s in sources)
            done = events[-1].json
            assert all(c["label"] == label for c in done["citations"])


def test_v1_chat_takes_labels_in_the_body(base):
    with httpx.Client(timeout=300) as client:
        body = {"model": "fieldguide", "messages": [{"role": "user", "content": "What happens in a sync conflict?"}]}
        answered = client.post(base + "/v1/chat/completions", json={**body, "labels": ["v2"]})
        assert answered.status_code == 200, answered.text
        citations = answered.json()["citations"]
        assert citations and {c.get("label") for c in citations} == {"v2"}
        refused = client.post(base + "/v1/chat/completions", json={**body, "labels": "v9"})
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "labels"


def test_llms_txt_lists_every_page_and_llms_full_txt_holds_them(base, indexed, embeddings):
    from ingest.pipeline import ingest_folder

    settings, folders = indexed
    index = httpx.get(base + "/llms.txt", timeout=60)
    assert index.status_code == 200 and index.headers["content-type"].startswith("text/plain")
    lines = index.text.splitlines()
    assert lines[0].startswith("# ") and lines[2].startswith("> ") and any(line.startswith("## ") for line in lines)
    links = [line for line in lines if line.startswith("- [")]
    assert all(re.match(r"^- \[[^\]]+\]\(http://127\.0\.0\.1:\d+/docs-assets/[^)]+\)(: .+)?$", link) for link in links)
    assert any("/docs-assets/screens/booking-form.md)" in link for link in links)
    assert any("/docs-assets/@v1/export.md)" in link for link in links)
    assert len(links) == len(list(SAMPLE_DOCS.rglob("*.md"))) + 3 + 4  # every page of every set

    v1 = httpx.get(base + "/llms.txt", params={"label": "v1"}, timeout=60).text
    assert v1.startswith("# ") and "(v1)" in v1.splitlines()[0]
    assert [line for line in v1.splitlines() if line.startswith("- [")] == [
        f"- [Accounts]({base}/docs-assets/@v1/accounts.md): Close an account from the account menu: choose Close "
        "and confirm twice.",
        f"- [Exporting data]({base}/docs-assets/@v1/export.md): In version one, choose File, then Export CSV.",
        f"- [Syncing devices]({base}/docs-assets/@v1/sync.md): Devices sync every fifteen minutes over the "
        "classic sync protocol."]

    full = httpx.get(base + "/llms-full.txt", params={"label": "v2"}, timeout=60)
    assert full.status_code == 200 and full.headers["content-type"].startswith("text/markdown")
    for name in ("export.md", "sync.md", "accounts.md"):
        for line in (folders["v2"] / name).read_text().splitlines():
            assert line in full.text  # every page's Markdown, whole
    assert "Version one" not in full.text
    assert httpx.get(base + "/llms-full.txt", params={"label": "v2"}, timeout=60).text == full.text
    assert httpx.get(base + "/llms.txt", params={"label": "v9"}, timeout=60).status_code == 422

    # kept until the next ingest changes the index
    (folders["v2"] / "sync.md").write_text("# Syncing devices\n\nDevices sync over carrier pigeon.\n")
    ingest_folder(folders["v2"], settings, progress=False, embeddings=embeddings, label="v2")
    changed = httpx.get(base + "/llms-full.txt", params={"label": "v2"}, timeout=60).text
    assert "carrier pigeon" in changed and "live sync channel" not in changed
    assert quote("v2") in changed


def test_the_gap_report_and_stored_turns_are_per_label(served, indexed):
    from fieldguide.commands.gaps import of_label
    from fieldguide.gaps import problem_turns, report_for

    base, app = served
    settings, _ = indexed
    question = "How do I bake sourdough bread at home?"
    with httpx.Client(timeout=300) as client:
        started = client.post(base + "/conversations", json={"question": question, "labels": ["v1"]}).json()
        with client.stream("GET", base + started["stream_url"]) as response:
            events = list(iter_sse(response))
    assert events[-1].event == "done" and events[-1].json["abstain"] is True
    service = app.state.service
    (record,) = service.state.turns.turns(started["conversation_id"])
    assert record.labels == ["v1"]

    def asked(label):
        summary = problem_turns(of_label(service.state.turns.turns_since(0.0), label))
        report = report_for(summary, settings, None, service.resources, label).to_dict()
        return [q for c in report["clusters"] for q in c["questions"]]
    assert question in asked("v1") and question not in asked("v2")
