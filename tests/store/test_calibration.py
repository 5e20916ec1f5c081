"""Per-index calibration against a real Weaviate: measured at ingest, stored with the manifest,
and an index built before calibration existed is read as it is and calibrated on first use."""
from __future__ import annotations

import pytest

from store_corpus import CountingEmbeddings, write_corpus

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
    from graph.resources import Resources
    from ingest.pipeline import ingest_folder

    docs = write_corpus(tmp_path / "docs")
    first = ingest_folder(docs, weaviate_settings, embeddings=embeddings, progress=False, log=lambda m: None)
    calibration = Calibration.from_dict(first.calibration)
    assert calibration.probes == len(OFF_TOPIC_PROBES) and calibration.chunks == first.chunks_written
    assert calibration.abstain_margin == pytest.approx(1.2 * calibration.margin_unit, abs=1e-3)
    assert calibration.probe_top["outliers"] == 0  # no probe stands far above the rest here
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


def test_probe_figures_are_kept_while_the_changed_chunks_stay_under_the_share():
    from fieldguide.calibration import RECALIBRATE_SHARE, Calibration

    measured = Calibration(rerank_min=0.6, abstain_margin=0.12, margin_unit=0.1, screen_share=0.5, scorer="s",
                           chunks=1000, probes=30)
    limit = int(RECALIBRATE_SHARE * 1000)
    assert measured.still_holds(limit - 1, 1000) and not measured.still_holds(limit, 1000)
    kept = measured.recounted(20, 990, 400)
    assert (kept.rerank_min, kept.abstain_margin, kept.margin_unit) == (0.6, 0.12, 0.1)
    assert (kept.chunks, kept.screen_share, kept.changed_since) == (990, 0.404, 20)
    # the changes add up over ingests until the probes run again
    assert kept.still_holds(limit - 21, 990) and not kept.still_holds(limit - 20, 990)
    # figures measured on an empty index hold nothing
    assert not Calibration(0.0, 0.0, 0.0, 0.0, "s", 0, 0).still_holds(0, 10)
    # figures stored before `changed_since` existed are still read
    older = {k: v for k, v in measured.to_dict().items() if k != "changed_since"}
    assert Calibration.from_dict(older) == measured
    assert Calibration.from_dict({"version": measured.version, "rerank_min": 0.5}) is None


def test_a_small_change_keeps_the_probe_figures_and_updates_the_term_statistics(
        weaviate_settings, embeddings, tmp_path, monkeypatch):
    from dataclasses import replace

    import fieldguide.calibration as calibration
    from fieldguide.bm25 import TermStats
    from fieldguide.calibration import OFF_TOPIC_PROBES, count_term_stats
    from fieldguide.store import open_store
    from ingest.pipeline import ingest_folder

    docs = write_corpus(tmp_path / "docs")
    counting = CountingEmbeddings(embeddings)

    def ingest():
        counting.queries = 0
        return ingest_folder(docs, weaviate_settings, embeddings=counting, progress=False, log=lambda m: None)

    def stored_and_counted():
        with open_store(weaviate_settings) as store:
            return TermStats.from_text(store.term_stats_text()), count_term_stats(store)

    first = ingest()
    assert counting.queries == len(OFF_TOPIC_PROBES) and first.calibration["changed_since"] == 0
    stored, counted = stored_and_counted()
    assert stored == counted  # a new index: the statistics of what was added are the full count

    # the four-page corpus is tiny, so any edit is a large share of it: allow one of 90 %
    monkeypatch.setattr(calibration, "RECALIBRATE_SHARE", 0.9)
    (docs / "reports.md").write_text("# Reports\n\nReports chart spending by payee.\n", encoding="utf-8")
    (docs / "getting-started.md").unlink()
    edited = ingest()
    assert counting.queries == 0  # the probes did not run
    probe_figures = ("rerank_min", "abstain_margin", "margin_unit", "probe_top", "probe_margin")
    assert {k: edited.calibration[k] for k in probe_figures} == {k: first.calibration[k] for k in probe_figures}
    assert edited.calibration["changed_since"] == edited.chunks_written + edited.chunks_deleted > 0
    stored, counted = stored_and_counted()
    assert stored == counted and stored.documents == edited.calibration["chunks"]
    assert "payee" in stored.document_frequency and "install" not in stored.document_frequency

    # once the changes add up to the share, the probes run again
    monkeypatch.setattr(calibration, "RECALIBRATE_SHARE", 0.0001)
    (docs / "reports.md").write_text("# Reports\n\nReports chart spending by category.\n", encoding="utf-8")
    measured = ingest()
    assert counting.queries == len(OFF_TOPIC_PROBES) and measured.calibration["changed_since"] == 0

    # statistics left marked by an interrupted ingest are counted again, not updated
    monkeypatch.setattr(calibration, "RECALIBRATE_SHARE", 0.9)
    with open_store(weaviate_settings) as store:
        wrong = TermStats.from_text(store.term_stats_text())
        wrong.document_frequency["category"] += 5
        store.set_term_stats(replace(wrong, ingest_pending=True).to_text())
    (docs / "reports.md").write_text("# Reports\n\nReports chart spending by month.\n", encoding="utf-8")
    ingest()
    stored, counted = stored_and_counted()
    assert stored == counted and not stored.ingest_pending
