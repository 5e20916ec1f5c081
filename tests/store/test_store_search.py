"""Search primitives over vectors we control: real cosine, filters, all properties."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.weaviate

DIM = 8


def _records(n):
    kinds = ["screen", "prose"]
    return [{
        "chunk_id": f"c{i}", "group_id": "g" if i < 3 else f"c{i}", "part_index": i + 1 if i < 3 else 1,
        "part_count": 3 if i < 3 else 1, "chunk_type": "section", "content_kind": kinds[i % 2],
        "source": f"page{i % 3}.md", "line_start": i + 1, "line_end": i + 4, "heading_path": ["Top", f"H{i}"],
        "text": f"text number {i}" + (" Balance field" if i == 5 else ""), "embed_text": f"Top > H{i}\n\ntext {i}",
        "token_count": 7, "images": [f"https://example.com/{i}.png"] if i == 4 else [],
    } for i in range(n)]


@pytest.fixture
def filled_store(weaviate_settings):
    from fieldguide.store import open_store

    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(12, DIM)).astype(np.float32)
    records = _records(12)
    with open_store(weaviate_settings) as store:
        store.ensure_collections()
        store.set_manifest("test-model", DIM, "1", "onnx-none")
        store.insert_chunks(records[::-1], vectors[::-1])  # insertion order must not matter
        yield store, records, vectors


def test_near_vector_similarity_is_numpy_cosine(filled_store):
    store, records, vectors = filled_store
    query = np.random.default_rng(3).normal(size=DIM)
    results = store.near_vector(query, k=12)
    cosine = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    by_id = {r["chunk_id"]: i for i, r in enumerate(records)}
    assert len(results) == 12
    for result in results:
        assert result["similarity"] == pytest.approx(cosine[by_id[result["chunk_id"]]], abs=1e-5)
    similarities = [r["similarity"] for r in results]
    assert similarities == sorted(similarities, reverse=True)
    assert results[0]["chunk_id"] == records[int(np.argmax(cosine))]["chunk_id"]


def test_results_carry_every_record_field_but_the_embedded_text(filled_store):
    # what was embedded (breadcrumb and text again) is not read after a search: not carried back
    store, records, vectors = filled_store
    result = store.near_vector(vectors[4], k=1)[0]
    assert result["similarity"] == pytest.approx(1.0, abs=1e-5)
    # a record written without a reading (the dialect pass's text) reads as its own text
    assert {k: v for k, v in result.items() if k != "similarity"} == {
        **{k: v for k, v in records[4].items() if k != "embed_text"}, "reading": records[4]["text"], "page_title": "",
        "parent_group_id": ""}


def test_content_kind_filter(filled_store):
    store, records, vectors = filled_store
    results = store.near_vector(vectors[0], k=12, content_kind="screen")
    assert {r["chunk_id"] for r in results} == {r["chunk_id"] for r in records if r["content_kind"] == "screen"}


def test_searches_sent_together_return_what_each_returns_alone(filled_store):
    store, _, vectors = filled_store
    calls = [lambda: store.near_vector(vectors[0], k=5), lambda: store.near_vector(vectors[0], k=3, content_kind="screen"),
             lambda: store.hybrid("Balance", vectors[5], k=2, alpha=0.2)]
    alone = [call() for call in calls]
    assert store.searches(calls) == alone
    assert store.searches(calls[:1]) == alone[:1]
    assert store.searches([]) == []


def test_searches_sent_together_raise_after_every_search_has_ended(filled_store):
    import threading

    store, _, vectors = filled_store
    ended = threading.Event()

    def slow_search():
        found = store.near_vector(vectors[0], k=3)
        ended.set()
        return found

    def failing():
        raise ValueError("bad filter")

    with pytest.raises(ValueError, match="bad filter"):
        store.searches([failing, slow_search])
    assert ended.is_set()  # nothing is left running behind the error
    with pytest.raises(ValueError, match="bad filter"):
        store.searches([slow_search, failing])


def test_group_parts_in_part_order(filled_store):
    store, _, _ = filled_store
    parts, intros = store.reassembly_parts(["g", "missing"])
    assert [p["chunk_id"] for p in parts["g"]] == ["c0", "c1", "c2"]
    assert parts["missing"] == [] and intros == []


def test_a_pages_records_come_in_the_pages_order_and_only_its_own(filled_store):
    store, records, _ = filled_store
    page = store.page_records("page1.md")
    assert [r["chunk_id"] for r in page] == ["c1", "c4", "c7", "c10"]  # line order, though inserted reversed
    assert all(r["source"] == "page1.md" for r in page) and page[0]["text"] == records[1]["text"]
    assert store.page_records("missing.md") == [] and store.page_records("") == []
    # under a heading path: the chunks whose headings hold its words, not the whole page
    assert [r["chunk_id"] for r in store.page_records("page1.md", ["Top", "H4"])] == ["c4"]
    assert [r["chunk_id"] for r in store.page_records("page1.md", ["Top"])] == ["c1", "c4", "c7", "c10"]


def test_parent_intros_are_the_stored_parents_first_parts(filled_store):
    """Two same-named parent sections in one file: each child names its own parent at ingest
    (`parent_group_id`), and its intro is that parent's first part."""
    from ingest.chunk import make_group_id

    store, records, _ = filled_store
    top = [make_group_id("page0.md", ["Top"], n) for n in range(2)]
    child = [make_group_id("page0.md", ["Top", "H0"], n) for n in range(2)]
    rows = [("p1", top[0], 1, 1, 1, ["Top"], ""), ("c1", child[0], 1, 1, 5, ["Top", "H0"], top[0]),
            ("p2a", top[1], 1, 2, 20, ["Top"], ""), ("p2b", top[1], 2, 2, 23, ["Top"], ""),
            ("c2", child[1], 1, 1, 25, ["Top", "H0"], top[1])]
    sections = [dict(records[3], chunk_id=cid, group_id=gid, part_index=index, part_count=count, source="page0.md",
                     heading_path=path, line_start=line, line_end=line + 2, embed_text="Top", parent_group_id=parent)
                for cid, gid, index, count, line, path, parent in rows]
    store.insert_chunks(sections, np.ones((len(rows), DIM), dtype=np.float32))
    stored = {r["chunk_id"]: r for parts in store.reassembly_parts(child)[0].values() for r in parts}
    assert stored["c1"]["parent_group_id"] == top[0] and stored["c2"]["parent_group_id"] == top[1]
    _, found = store.reassembly_parts([], [stored["c2"]["parent_group_id"], stored["c1"]["parent_group_id"],
                                           "", "missing", child[0]])
    assert [f and f["chunk_id"] for f in found] == ["p2a", "p1", None, None, "c1"]
    assert found[0]["text"] == records[3]["text"] and found[0]["heading_path"] == ["Top"]
    assert store.reassembly_parts([], []) == ({}, [])


def test_reassembly_parts_answers_both_questions_in_one_call(filled_store):
    from ingest.chunk import make_group_id

    store, records, _ = filled_store
    parent = make_group_id("page9.md", ["Guide"], 0)
    split = make_group_id("page9.md", ["Guide", "Steps"], 0)
    rows = [("g9p", parent, 1, 1, 1, ["Guide"]), ("g9s2", split, 2, 2, 9, ["Guide", "Steps"]),
            ("g9s1", split, 1, 2, 5, ["Guide", "Steps"])]
    store.insert_chunks([dict(records[0], chunk_id=cid, group_id=gid, part_index=index, part_count=count,
                              source="page9.md", heading_path=path, line_start=line, line_end=line + 2)
                         for cid, gid, index, count, line, path in rows], np.ones((len(rows), DIM), dtype=np.float32))
    wanted = [parent, make_group_id("page9.md", ["Nowhere"], 0)]
    parts, intros = store.reassembly_parts([split, "missing"], wanted)
    assert [p["chunk_id"] for p in parts[split]] == ["g9s1", "g9s2"] and parts["missing"] == []
    assert [i and i["chunk_id"] for i in intros] == ["g9p", None]
    assert parts[split] == store.reassembly_parts([split])[0][split] and intros == store.reassembly_parts([], wanted)[1]


def test_hybrid_finds_exact_words_and_reports_cosine(filled_store):
    store, records, vectors = filled_store
    query = vectors[0]
    results = store.hybrid("Balance", query, k=3, alpha=0.2)
    assert results[0]["chunk_id"] == "c5"
    cos = float(vectors[5] @ query / (np.linalg.norm(vectors[5]) * np.linalg.norm(query)))
    assert results[0]["similarity"] == pytest.approx(cos, abs=1e-5)
    assert "score" in results[0]


def test_manifest_round_trip_and_mismatch(filled_store):
    from fieldguide.errors import ModelMismatch

    store, _, _ = filled_store
    assert store.manifest() == {"embedding_model": "test-model", "dimension": DIM, "chunker_version": "1",
                                "embedding_backend": "onnx-none",
                                "calibration": None, "query_prompt": None, "passage_prompt": None,
                                "ingest_stamp": None, "docs_dialect": None}
    assert store.check_manifest("test-model")["dimension"] == DIM
    with pytest.raises(ModelMismatch, match="--reindex"):
        store.check_manifest("another-model")
    assert store.ready()


def test_a_store_whose_vector_search_finds_nothing_is_not_ready(filled_store, weaviate_settings):
    from fieldguide.service.readiness import store_readiness
    from fieldguide.store import open_store

    store, records, _ = filled_store
    assert store.unsearchable_reason(DIM) is None
    with open_store(weaviate_settings.model_copy(update={"collection": weaviate_settings.collection + "Novec"})) as bare:
        bare.ensure_collections()
        bare.set_manifest("test-model", DIM, "1", "onnx-none")
        assert bare.unsearchable_reason(DIM) is None  # nothing stored: nothing to find
        # Objects stored without their vectors: the index holds none of them.
        bare.chunks.data.insert_many([{name: r[name] for name in r} for r in records[:4]])
        reason = bare.unsearchable_reason(DIM)
        assert "holds 4 chunks" in reason and "--reindex" in reason
        settings = weaviate_settings.model_copy(update={"collection": bare.name})
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("fieldguide.embedding.embedding_model_id", lambda _settings: "test-model")
            assert store_readiness(settings)() == reason
        bare.drop()


def test_an_index_from_before_parents_were_named_reads_with_no_parent_intro(weaviate_settings, monkeypatch):
    """A collection made without `parent_group_id` answers searches (its records name no parent,
    so reassembly adds no intro) until an ingest adds the property."""
    import fieldguide.store.schema as schema
    from fieldguide.store import open_store

    record = dict(_records(1)[0], chunk_type="subsection")
    with open_store(weaviate_settings) as store:
        monkeypatch.setattr(schema, "ADDED_CHUNK_FIELDS", ("reading", "page_title"))
        store.ensure_collections()
        store.set_manifest("test-model", DIM, "1", "onnx-none")
        monkeypatch.undo()
        store._properties_seen.clear()  # as a store opened on that index finds it
        assert "parent_group_id" not in {p.name for p in store.chunks.config.get().properties}
        from weaviate.classes.data import DataObject

        from ingest.chunk import chunk_uuid

        vector = np.ones(DIM, dtype=np.float32)
        store.chunks.data.insert_many([DataObject(properties=record, uuid=chunk_uuid(record["chunk_id"]),
                                                  vector=vector.tolist())])  # as the older release wrote it
        assert store.near_vector(vector, k=1)[0]["parent_group_id"] == ""
        assert store.reassembly_parts([record["group_id"]], ["anything"])[1] == [None]
        store.ensure_collections()  # what the next ingest does first
        assert "parent_group_id" in {p.name for p in store.chunks.config.get().properties}
        assert store.near_vector(vector, k=1)[0]["parent_group_id"] == ""
