"""Per-index calibration against a real Weaviate: measured at ingest, stored with the manifest,
and an index built before calibration existed is read as it is and calibrated on first use."""
from __future__ import annotations

import pytest

from store_corpus import write_corpus

pytestmark = [pytest.mark.weaviate, pytest.mark.models]


def rebuild_manifest_the_old_way(store) -> dict:
    """The manifest collection as it was before calibration: three properties, one object."""
    from weaviate.classes.config import Configure, DataType, Property, VectorDistances

    from fieldguide.store import MANIFEST_UUID

    old = store.manifest()
    store.client.collections.delete(store.manifest_name)
    store.client.collections.create(
        store.manifest_name, vector_config=Configure.Vectors.self_provided(
            vector_index_config=Configure.VectorIndex.flat(distance_metric=VectorDistances.COSINE)),
        properties=[Property(name="embedding_model", data_type=DataType.TEXT),
                    Property(name="dimension", data_type=DataType.INT),
                    Property(name="chunker_version", data_type=DataType.TEXT)])
    store.client.collections.use(store.manifest_name).data.insert(
        properties={k: old[k] for k in ("embedding_model", "dimension", "chunker_version")}, uuid=MANIFEST_UUID)
    return old


def test_ingest_calibrates_stores_and_an_old_manifest_is_migrated(weaviate_settings, embeddings, tmp_path):
    from fieldguide.bm25 import TermStats
    from fieldguide.calibration import OFF_TOPIC_PROBES, Calibration
    from fieldguide.store import open_store
    from graph.runtime import Resources
    from ingest.pipeline import ingest_folder

    docs = write_corpus(tmp_path / "docs")
    first = ingest_folder(docs, weaviate_settings, embeddings=embeddings, progress=False, log=lambda m: None)
    calibration = Calibration.from_dict(first.calibration)
    assert calibration.probes == len(OFF_TOPIC_PROBES) and calibration.chunks == first.chunks_written
    assert calibration.abstain_margin == pytest.approx(1.2 * calibration.margin_unit, abs=1e-3)
    assert calibration.rerank_min == calibration.probe_top["max"]
    with open_store(weaviate_settings) as store:
        assert store.manifest()["calibration"] == first.calibration
        stats = TermStats.from_text(store.term_stats_text())
        assert stats.documents == first.chunks_written and stats.document_frequency["reconciliation"] >= 1
        screens = store.count_kind("screen")
        assert calibration.screen_share == round(screens / first.chunks_written, 4)

        old = rebuild_manifest_the_old_way(store)
        assert store.manifest()["calibration"] is None and store.term_stats_text() is None
        assert old["embedding_model"] == store.check_manifest(old["embedding_model"])["embedding_model"]

    resources = Resources(weaviate_settings, embeddings=embeddings)  # the pipeline reads the old index as it is
    try:
        assert resources.term_stats is None  # BM25 then uses the candidates' own statistics
        measured = resources.calibration  # calibrated on first use, not stored
        assert measured.probes == len(OFF_TOPIC_PROBES)
        assert resources.store.manifest()["calibration"] is None
    finally:
        resources.close()

    again = ingest_folder(docs, weaviate_settings, embeddings=embeddings, progress=False, log=lambda m: None)
    assert again.files_skipped == 4 and again.chunks_written == 0  # nothing re-embedded
    assert again.calibration["probes"] == len(OFF_TOPIC_PROBES)  # ... but the migrated index is calibrated
    with open_store(weaviate_settings) as store:
        assert store.manifest()["calibration"] == again.calibration
        assert TermStats.from_text(store.term_stats_text()).documents == first.chunks_written


def test_an_empty_folder_gives_an_empty_calibration(weaviate_settings, embeddings, tmp_path):
    from ingest.pipeline import ingest_folder

    (tmp_path / "empty").mkdir()
    summary = ingest_folder(tmp_path / "empty", weaviate_settings, embeddings=embeddings, progress=False,
                            log=lambda m: None)
    assert summary.calibration is None or summary.calibration["probes"] == 0
