"""After an ingest wrote its changes: the index's profile brought up to date. The term
statistics are updated from what the run removed and added (`TermChangeLog`), or counted again
when the stored ones cannot be trusted; the calibration is measured again when enough changed,
for the whole index and for a labelled doc set alone."""
from __future__ import annotations

from dataclasses import replace


def _stored_term_stats(store, manifest):
    """The term statistics an ingest may update from its changes: the stored ones, empty ones for
    an index being built (or rebuilt) now, None when they must be counted again (none stored, or
    marked as left by an interrupted ingest)."""
    from fieldguide.bm25 import TermStats

    if not manifest:
        return TermStats(0, 0.0, {})
    stats = TermStats.from_text(store.term_stats_text())
    return None if stats is None or stats.ingest_pending else stats


class TermChangeLog:
    """The documents an ingest removes from and adds to the collection (`fieldguide.bm25`), so
    the term statistics are updated without reading the whole collection back. Every call is
    made on the thread that writes to the store, just before the write it describes."""

    def __init__(self, store, stored_counts: dict[str, int], read_stats):
        from fieldguide.bm25 import TermStatsChange

        self.store = store
        self.stored_counts = stored_counts  # source -> chunks stored when the run began
        self.read_stats = read_stats  # the stored statistics, read when a run writes (or at the end)
        self.stats = None  # the statistics the change applies to; None: count everything at the end
        self.begun = False
        self.change = TermStatsChange()
        self.read: set[str] = set()

    def begin(self) -> None:
        """Before the first write: mark the stored statistics, so that if this run is killed the
        next one counts everything instead of updating statistics that miss this run's writes."""
        self.begun = True
        self.stats = self.read_stats()
        # statistics of no documents need no mark: whatever a killed run adds to them shows as a
        # chunk count they do not match
        if self.stats is not None and self.stats.documents:
            self.store.set_term_stats(replace(self.stats, ingest_pending=True).to_text())

    def before_replacing(self, source: str) -> None:
        """Count out the stored chunks of `source` (once per run, before its first write)."""
        from fieldguide.bm25 import document_words

        if self.stats is None or source in self.read:
            return
        self.read.add(source)
        count = self.stored_counts.get(source, 0)
        documents = self.store.source_documents(source, count)
        if len(documents) != count:  # the aggregation and the objects disagree: trust neither
            self.stats = None
            return
        for heading_path, text in documents:
            self.change.remove(document_words(heading_path, text))

    def added(self, chunks) -> None:
        from fieldguide.bm25 import document_words

        if self.stats is not None:
            for chunk in chunks:
                self.change.add(document_words(chunk.heading_path, chunk.reading or chunk.text))

    def term_stats(self, store):
        """The statistics of the collection as it is now: updated when they can be, else counted."""
        from fieldguide.calibration import count_term_stats

        if not self.begun:  # nothing was written: the stored statistics as they are
            self.stats = self.read_stats()
        updated = self.change.applied_to(self.stats) if self.stats is not None else None
        if updated is not None and updated.documents == store.count():
            return updated
        return count_term_stats(store)


def _profile(settings, store, embeddings, *, changed: bool, log, terms: TermChangeLog,
             changed_chunks: int) -> dict | None:
    """The index's calibration and term statistics, stored. An unchanged index keeps what is
    stored when it was made for the active scorer; a changed one gets its term statistics
    updated, and its probes run again when the change is large enough (`Calibration.still_holds`)
    or the stored figures are for another scorer. None for an index that was never built."""
    from fieldguide.calibration import RECALIBRATE_SHARE, Calibration, calibrate, scorer_scale
    from fieldguide.embedding import embedding_prompts, load_embeddings
    from fieldguide.reranker import load_reranker

    if not store.exists():
        return None
    reranker = load_reranker(settings)
    query_prompt, passage_prompt = embedding_prompts(settings)
    stored = Calibration.from_dict((store.manifest() or {}).get("calibration"))
    if stored is not None and stored.scorer != scorer_scale(reranker):
        stored = None
    if stored is not None and not changed:
        return stored.to_dict()
    term_stats = terms.term_stats(store)
    chunks = term_stats.documents
    if stored is not None and stored.still_holds(changed_chunks, chunks):
        profile = stored.recounted(changed_chunks, chunks, store.count_kind("screen"))
        log(f"kept the calibration of {store.name}: {profile.changed_since} chunks changed since it was measured, "
            f"under {RECALIBRATE_SHARE:.0%} of {chunks}")
    else:
        profile = calibrate(store, embeddings or load_embeddings(settings), reranker, term_stats)
        log(f"calibrated {store.name}: rerank_min {profile.rerank_min}, abstain_margin {profile.abstain_margin}, "
            f"screen share {profile.screen_share} ({profile.probes} probes, {scorer_scale(reranker)})")
    store.ensure_collections()  # an older manifest collection gains the profile's properties
    store.set_index_profile(profile.to_dict(), term_stats.to_text(), query_prompt, passage_prompt)
    return profile.to_dict()


def _label_profile(settings, store, embeddings, label: str, *, changed: bool, log) -> None:
    """The calibration of one label's chunks alone, stored with the label: a question limited to
    that doc set is judged against its scale (measured again whenever the set changed)."""
    from fieldguide.calibration import Calibration, calibrate, scorer_scale
    from fieldguide.embedding import load_embeddings
    from fieldguide.reranker import load_reranker

    reranker = load_reranker(settings)
    stored = Calibration.from_dict(store.label_calibration(label))
    if stored is not None and stored.scorer == scorer_scale(reranker) and not changed:
        return
    from fieldguide.bm25 import TermStats

    term_stats = TermStats.from_text(store.term_stats_text())
    profile = calibrate(store.limited_to([label]), embeddings or load_embeddings(settings), reranker, term_stats)
    store.set_label_calibration(label, profile.to_dict())
    log(f"calibrated label {label}: rerank_min {profile.rerank_min}, abstain_margin {profile.abstain_margin} "
        f"({profile.chunks} chunks)")
