"""Incremental ingest against a real Weaviate: idempotent, edits replace, deletions delete."""
from __future__ import annotations

import pytest

from store_corpus import CountingEmbeddings, write_corpus

pytestmark = [pytest.mark.weaviate, pytest.mark.models]


def _ingest(docs, settings, embeddings, **kwargs):
    from fieldguide.store import open_store
    from ingest.pipeline import ingest_folder

    with open_store(settings) as store:
        summary = ingest_folder(docs, settings, progress=False, store=store, embeddings=embeddings, **kwargs)
        return summary, store.count(), store.sources()


def _expected_chunks(docs):
    from ingest.chunker import Chunker, iter_markdown_files

    chunker = Chunker()
    return {path.relative_to(docs).as_posix(): chunker.chunk_path(path, docs).chunks
            for path in iter_markdown_files(docs)}


def test_first_ingest_then_rerun_is_idempotent(tmp_path, weaviate_settings, embeddings):
    docs = write_corpus(tmp_path / "docs")
    expected = _expected_chunks(docs)
    total = sum(len(chunks) for chunks in expected.values())
    counting = CountingEmbeddings(embeddings)

    first, count, sources = _ingest(docs, weaviate_settings, counting)
    assert (first.files_seen, first.files_added, first.files_skipped) == (4, 4, 0)
    assert first.chunks_written == first.texts_embedded == counting.texts == total == count
    assert sources == set(expected)

    counting.texts = 0
    second, count_again, _ = _ingest(docs, weaviate_settings, counting)
    assert counting.texts == 0
    assert second.to_dict() | {"seconds": 0, "calibration": None} == {
        "files_seen": 4, "files_skipped": 4, "files_changed": 0, "files_added": 0, "files_deleted": 0,
        "chunks_written": 0, "chunks_deleted": 0, "texts_embedded": 0, "seconds": 0, "calibration": None}
    assert second.calibration == first.calibration  # unchanged index: the stored calibration, not measured again
    assert count_again == count


def test_edited_file_is_replaced_and_deleted_file_removed(tmp_path, weaviate_settings, embeddings):
    from fieldguide.store import open_store

    docs = write_corpus(tmp_path / "docs")
    before = _expected_chunks(docs)
    _, count_before, _ = _ingest(docs, weaviate_settings, embeddings)

    # edit: one section gone, one new section; delete another page entirely
    (docs / "getting-started.md").write_text(
        "# Getting started\n\nInstall the app and open your first budget file.\n\n"
        "## Sync across devices\n\nTurn on sync from **Settings > Sync** to use the budget on your phone.\n",
        encoding="utf-8")
    (docs / "reports.md").unlink()
    after = _expected_chunks(docs)
    counting = CountingEmbeddings(embeddings)
    summary, count, sources = _ingest(docs, weaviate_settings, counting)

    assert (summary.files_seen, summary.files_changed, summary.files_deleted, summary.files_skipped) == (3, 1, 1, 2)
    assert summary.texts_embedded == counting.texts == len(after["getting-started.md"])
    assert summary.chunks_deleted == len(before["getting-started.md"]) + len(before["reports.md"])
    assert count == count_before - summary.chunks_deleted + summary.chunks_written
    assert count == sum(len(chunks) for chunks in after.values())
    assert sources == set(after)

    with open_store(weaviate_settings) as store:
        stored_texts = {r["text"] for r in store.near_vector(embeddings.embed_query("sync devices"), k=50)}
    assert any("Settings > Sync" in text for text in stored_texts)
    assert not any("New budget" in text for text in stored_texts)  # the removed section is gone
    assert not any("Net worth" in text for text in stored_texts)  # the deleted page is gone


def test_reindex_rebuilds_from_the_folder(tmp_path, weaviate_settings, embeddings):
    docs = write_corpus(tmp_path / "docs")
    first, count, _ = _ingest(docs, weaviate_settings, embeddings)
    summary, count_again, _ = _ingest(docs, weaviate_settings, embeddings, reindex=True)
    assert summary.files_added == 4 and summary.files_skipped == 0
    assert summary.texts_embedded == first.texts_embedded
    assert count_again == count


def test_other_embedding_model_is_refused_naming_reindex(tmp_path, weaviate_settings, embeddings):
    from fieldguide.errors import ModelMismatch
    from fieldguide.store import open_store

    docs = write_corpus(tmp_path / "docs")
    _ingest(docs, weaviate_settings, embeddings)
    other = weaviate_settings.model_copy(update={"embedding_model": "sentence-transformers/paraphrase-MiniLM-L3-v2"})
    with pytest.raises(ModelMismatch, match="--reindex"):
        _ingest(docs, other, embeddings)
    with open_store(other) as store, pytest.raises(ModelMismatch, match="--reindex"):
        store.check_manifest("sentence-transformers/paraphrase-MiniLM-L3-v2")


def test_split_section_parts_come_back_in_order(tmp_path, weaviate_settings, embeddings):
    from fieldguide.store import open_store

    docs = write_corpus(tmp_path / "docs")
    split = [c for c in _expected_chunks(docs)["reconcile.md"] if c.part_count > 1]
    assert split, "the corpus must contain a section long enough to be split"
    _ingest(docs, weaviate_settings, embeddings)
    with open_store(weaviate_settings) as store:
        parts = store.reassembly_parts([split[0].group_id])[0][split[0].group_id]
    assert [p["part_index"] for p in parts] == list(range(1, split[0].part_count + 1))
    assert [p["chunk_id"] for p in parts] == [c.chunk_id for c in sorted(split, key=lambda c: c.part_index)
                                             if c.group_id == split[0].group_id]
    assert all(p["part_count"] == split[0].part_count for p in parts)


def test_encoding_starts_while_later_files_are_still_being_chunked(tmp_path, weaviate_settings, embeddings,
                                                                   monkeypatch):
    """Rounds of three texts: the first round is embedded before the last file is chunked, and
    every chunk, file record and empty page still lands."""
    import threading
    import time

    import ingest.pipeline
    from ingest.chunker import Chunker

    docs = write_corpus(tmp_path / "docs")
    (docs / "zz-empty.md").write_text("", encoding="utf-8")
    expected = _expected_chunks(docs)
    monkeypatch.setattr(ingest.pipeline, "TEXTS_PER_ROUND", 3)
    events: list[tuple[str, str]] = []
    chunk_bytes = Chunker.chunk_bytes

    def slow_chunk_bytes(self, raw, source):
        if events:  # every file after the first takes a while to chunk
            time.sleep(0.3)
        chunked = chunk_bytes(self, raw, source)
        events.append(("chunked", source))
        return chunked

    class RecordingEmbeddings(CountingEmbeddings):
        def embed_documents(self, texts):
            events.append(("embedded", threading.current_thread().name))
            return super().embed_documents(texts)

    monkeypatch.setattr(Chunker, "chunk_bytes", slow_chunk_bytes)
    recording = RecordingEmbeddings(embeddings)
    summary, count, sources = _ingest(docs, weaviate_settings, recording)
    kinds = [kind for kind, _ in events]
    assert kinds.index("embedded") < len(kinds) - 1 - kinds[::-1].index("chunked")
    total = sum(len(chunks) for chunks in expected.values())
    assert summary.texts_embedded == recording.texts == summary.chunks_written == count == total
    assert sources == {source for source, chunks in expected.items() if chunks}
    again, _, _ = _ingest(docs, weaviate_settings, recording)
    assert (again.files_seen, again.files_skipped, again.texts_embedded) == (5, 5, 0)  # the empty page too


def test_a_rejected_insert_is_reported_and_a_rerun_loses_nothing(tmp_path, weaviate_settings, embeddings,
                                                               monkeypatch):
    """Rounds of three texts, inserted on the writer thread while the next round encodes. The
    second round's vectors are one coordinate short, so Weaviate rejects that insert: the run
    stops with the server's message, only files whose every chunk is stored are recorded, and
    the same command run again embeds exactly the unrecorded files and ends complete."""
    import ingest.pipeline
    from fieldguide.errors import StoreUnavailable
    from fieldguide.store import open_store
    from ingest.chunk import chunk_uuid

    docs = write_corpus(tmp_path / "docs")
    (docs / "zz-empty.md").write_text("", encoding="utf-8")
    expected = _expected_chunks(docs)
    total = sum(len(chunks) for chunks in expected.values())
    assert total > 6  # at least three rounds
    monkeypatch.setattr(ingest.pipeline, "TEXTS_PER_ROUND", 3)

    class ShortSecondRound(CountingEmbeddings):
        calls = 0

        def embed_documents(self, texts):
            self.calls += 1
            vectors = super().embed_documents(texts)
            return [list(v)[:-1] for v in vectors] if self.calls == 2 else vectors

    with pytest.raises(StoreUnavailable, match=r"Weaviate rejected \d+ chunks") as raised:
        _ingest(docs, weaviate_settings, ShortSecondRound(embeddings))
    assert "re-run the same command" in str(raised.value)

    with open_store(weaviate_settings) as store:
        recorded = store.file_records()
        stored: dict[str, set[str]] = {}
        for obj in store.chunks.iterator(return_properties=["source"]):
            stored.setdefault(obj.properties["source"], set()).add(str(obj.uuid))
    assert set(recorded) < set(expected)  # the rejected round's files have no record
    for source, record in recorded.items():  # a recorded file has every chunk stored
        assert stored.get(source, set()) == {chunk_uuid(c.chunk_id) for c in expected[source]}
        assert record["chunk_count"] == len(expected[source])

    counting = CountingEmbeddings(embeddings)
    again, count, sources = _ingest(docs, weaviate_settings, counting)
    assert again.files_skipped == len(recorded)
    assert again.texts_embedded == counting.texts == sum(
        len(chunks) for source, chunks in expected.items() if source not in recorded)
    assert count == total and sources == {source for source, chunks in expected.items() if chunks}
    third, _, _ = _ingest(docs, weaviate_settings, counting)
    assert (third.files_skipped, third.texts_embedded) == (len(expected), 0)


def test_an_int8_index_is_refused_to_the_fp32_backends_naming_reindex(tmp_path, weaviate_settings, embeddings):
    from fieldguide.errors import ModelMismatch
    from fieldguide.service.readiness import store_readiness
    from graph.resources import Resources

    docs = write_corpus(tmp_path / "docs")
    int8 = weaviate_settings.model_copy(update={"embedding_backend": "onnx", "embedding_quantization": "int8"})
    _ingest(docs, int8, embeddings)
    for update in ({"embedding_backend": "torch"}, {"embedding_backend": "onnx", "embedding_quantization": "none"}):
        other = weaviate_settings.model_copy(update=update)
        with pytest.raises(ModelMismatch, match="--reindex") as raised:
            _ingest(docs, other, embeddings)
        assert ("'onnx-int8'" in str(raised.value)
                and "FIELDGUIDE_EMBEDDING_BACKEND=onnx FIELDGUIDE_EMBEDDING_QUANTIZATION=int8" in str(raised.value))
        resources = Resources(other, embeddings=embeddings)
        try:
            with pytest.raises(ModelMismatch, match="--reindex"):
                resources.check_manifest()
        finally:
            resources.close()
        assert "--reindex" in store_readiness(other)()
    assert store_readiness(int8)() is None


def test_an_index_built_in_bf16_is_shared_with_fp32_and_refused_to_int8(tmp_path, weaviate_settings, embeddings):
    from fieldguide.errors import ModelMismatch
    from fieldguide.store import backend_mismatch_message, open_store

    docs = write_corpus(tmp_path / "docs")
    bf16_id = "onnx-bf16"  # what OpenVINO's run of the fp32 graph records where the CPU computes in bf16
    fp32 = weaviate_settings.model_copy(update={"embedding_backend": "onnx", "embedding_quantization": "none",
                                                "embedding_runtime": "onnxruntime"})
    _ingest(docs, fp32, embeddings)
    with open_store(fp32) as store:
        model_id, _ = _identity(fp32)
        assert store.check_manifest(model_id, bf16_id)["embedding_backend"] == "onnx-none"
        assert store.ready(model_id, bf16_id) and store.ready(model_id, "torch")
        with pytest.raises(ModelMismatch, match="--reindex"):
            store.check_manifest(model_id, "onnx-int8")
    message = backend_mismatch_message("Docs", bf16_id, "onnx-int8")
    assert "FIELDGUIDE_EMBEDDING_BACKEND=onnx FIELDGUIDE_EMBEDDING_QUANTIZATION=none " \
           "FIELDGUIDE_EMBEDDING_RUNTIME=openvino" in message


def test_torch_and_the_fp32_onnx_graph_share_an_index(tmp_path, weaviate_settings, embeddings):
    from fieldguide.store import open_store

    docs = write_corpus(tmp_path / "docs")
    torch = weaviate_settings.model_copy(update={"embedding_backend": "torch"})
    fp32 = weaviate_settings.model_copy(update={"embedding_backend": "onnx", "embedding_quantization": "none"})
    _ingest(docs, torch, embeddings)
    (docs / "reports.md").write_text("# Reports\n\nReports show spending by category.\n", encoding="utf-8")
    summary, _, _ = _ingest(docs, fp32, embeddings)  # accepted: the same vectors
    assert summary.files_changed == 1
    with open_store(fp32) as store:
        assert store.check_manifest(*_identity(fp32))["embedding_backend"] == "torch"  # as built
        assert store.ready(*_identity(torch)) and store.ready(*_identity(fp32))


def _identity(settings):
    from fieldguide.embedding import embedding_backend_id, embedding_model_id

    return embedding_model_id(settings), embedding_backend_id(settings)


def test_a_manifest_from_before_backends_reads_as_torch_and_takes_the_new_property(weaviate_settings):
    from weaviate.classes.config import Configure, DataType, Property

    from fieldguide.errors import ModelMismatch
    from fieldguide.store import MANIFEST_UUID, open_store

    with open_store(weaviate_settings) as store:
        store.client.collections.create(  # the manifest collection as earlier versions made it
            store.manifest_name, vector_config=Configure.Vectors.self_provided(),
            properties=[Property(name="embedding_model", data_type=DataType.TEXT),
                        Property(name="dimension", data_type=DataType.INT),
                        Property(name="chunker_version", data_type=DataType.TEXT)])
        store.client.collections.use(store.manifest_name).data.insert(
            {"embedding_model": "m", "dimension": 3, "chunker_version": "1"}, uuid=MANIFEST_UUID)
        assert store.manifest()["embedding_backend"] == "torch"
        assert store.check_manifest("m", "torch")["dimension"] == 3
        with pytest.raises(ModelMismatch, match="FIELDGUIDE_EMBEDDING_BACKEND=torch"):
            store.check_manifest("m", "onnx-int8")
        store.set_manifest("m", 3, "2", "onnx-int8")
        assert store.manifest() == {"embedding_model": "m", "dimension": 3, "chunker_version": "2",
                                    "embedding_backend": "onnx-int8", "calibration": None,
                                    "query_prompt": None, "passage_prompt": None, "ingest_stamp": None,
                                    "docs_dialect": None}
