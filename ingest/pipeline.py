"""Incremental ingestion: a docs folder -> chunks -> vectors -> the store.

Each file is identified by its path relative to the docs root and fingerprinted by the
sha256 of its raw bytes. A run compares the folder with the file records in the store:

* unchanged files are skipped without chunking or embedding anything;
* added and changed files are chunked, embedded in batches and upserted (object UUID =
  uuid5 of the chunk id, so a re-run overwrites instead of duplicating); then the file's
  chunks that the new version no longer has are deleted and its record updated. The record
  is written last, so an interrupted run simply redoes that file next time;
* files gone from the folder have their chunks and record deleted.

An ingest that was killed halfway leaves chunks of files that have no record yet (or
not all of a file's chunks): each run compares the records with the chunks actually stored
(one aggregation), redoes every file whose count disagrees and deletes the chunks of sources
that are neither recorded nor in the folder, so the next run ends with no duplicates, no
orphans and records that agree with the objects.

One ingest of a collection runs at a time (`ingest.lock`), and a collection that holds
another folder's documents is refused rather than mirrored onto this one: ingest mirrors
one folder, so it would delete them all.

A labelled ingest (`label="v2"`) mirrors its folder onto that doc set alone: every read and
write of files and chunks goes through the store's `for_label` view, so the other sets' chunks
and records are never read as its own, never deleted, and never overwritten (a labelled set's
chunk ids carry the label). Without a label the unnamed set is mirrored, as before labels
existed; `--reindex` of a collection that holds other sets rebuilds only this one.

When nothing changed, the embedding model is never loaded: an unchanged re-run costs a
directory walk, the hashes and two queries.

After a change the index's profile is brought up to date (`_profile`): the term statistics from
the stored ones plus what this run removed and added (`TermChangeLog`: the old chunks of each
replaced or deleted file are read back just before they are overwritten), the whole collection
is read back only when the stored statistics cannot be trusted; the calibration's probes run
again only when the chunks changed since they last ran reach `RECALIBRATE_SHARE` of the index
(`fieldguide.calibration`).
"""
from __future__ import annotations

import ctypes
import gc
import queue
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from fieldguide.errors import FieldguideError

# Texts per embed+insert round: large enough that length-sorted batches pad little,
# small enough that the progress bar moves and memory stays flat.
TEXTS_PER_ROUND = 512


@dataclass
class IngestSummary:
    files_seen: int = 0
    files_skipped: int = 0
    files_changed: int = 0
    files_added: int = 0
    files_deleted: int = 0
    chunks_written: int = 0
    chunks_deleted: int = 0
    texts_embedded: int = 0
    seconds: float = 0.0
    # The index's calibration (fieldguide.calibration), measured again whenever the index changed.
    calibration: dict | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _PendingFile:
    source: str
    sha256: str
    chunk_uuids: list[str]
    remaining: int
    replaces: bool  # the store holds an older version of this file


def release_memory() -> None:
    """Hand freed batch memory back to the OS (glibc keeps freed arenas otherwise)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc


def ingest_folder(docs_dir: Path, settings, *, reindex: bool = False, progress: bool = True,
                  store=None, embeddings=None, log=None, token_pass: bool = True, wait: bool = True,
                  label: str | None = None) -> IngestSummary:
    """Bring the store's collection in line with `docs_dir`. Returns the run's counts.

    `store` (a ChunkStore) and `embeddings` may be passed in (tests, long-lived services);
    otherwise they are opened here. `token_pass=False` only serves to measure what the
    token-safe pass buys (`fieldguide eval --ablate`, into a collection of its own).
    While another ingest of the collection runs, this one waits (`wait=False`: IngestBusy).
    `label` names the doc set the folder is (a version, a product); None: the unnamed set.
    """
    from fieldguide.labels import check_label

    if not Path(docs_dir).is_dir():
        raise FieldguideError(f"{docs_dir} is not a directory.")
    label = check_label(label) if label else None
    if store is None:
        from fieldguide.store import open_store

        with open_store(settings) as opened:
            return ingest_folder(docs_dir, settings, reindex=reindex, progress=progress,
                                 store=opened, embeddings=embeddings, log=log, token_pass=token_pass, wait=wait,
                                 label=label)

    from ingest.lock import ingest_lock

    log = log or (lambda message: print(message, file=sys.stderr))
    with ingest_lock(settings.model_copy(update={"collection": store.name}), wait=wait, log=log), \
            _patient(store):
        if label or hasattr(store, "for_label"):
            store = store.for_label(label)
        return _ingest(Path(docs_dir), settings, store, embeddings, reindex, progress, log, token_pass)


def _patient(store):
    """The store's `ingesting()` (an ingest waits out a failover instead of failing), when it has one."""
    import contextlib

    ingesting = getattr(store, "ingesting", None)
    return ingesting() if ingesting is not None else contextlib.nullcontext()


def _ingest(docs_dir: Path, settings, store, embeddings, reindex, progress, log, token_pass) -> IngestSummary:
    from ingest.chunk import CHUNKER_VERSION
    from ingest.chunker import Chunker, iter_markdown_files
    from ingest.dialects import DEFAULT_DIALECT, folder_dialect_of
    from ingest.feed import ChunkFeed

    from fieldguide.embedding import embedding_backend_id, embedding_model_id

    started = time.perf_counter()
    docs_dir = Path(docs_dir)
    summary = IngestSummary()

    # 1. what is there; the folder's dialect (read from its files, or set) decides how they read
    files = [(path.relative_to(docs_dir).as_posix(), path) for path in iter_markdown_files(docs_dir)]
    try:
        dialect = folder_dialect_of(docs_dir, [path for _, path in files], getattr(settings, "docs_dialect", None))
    except ValueError as exc:  # FIELDGUIDE_DOCS_DIALECT names no dialect
        raise FieldguideError(f"FIELDGUIDE_DOCS_DIALECT: {exc}") from None
    index = _IndexIdentity(embedding_model_id(settings), embedding_backend_id(settings), CHUNKER_VERSION,
                           dialect.name)
    label = getattr(store, "label", None)
    rebuilt_set = False
    if reindex and _other_sets(store):
        # other doc sets live in the collection: rebuild this one only, in the index's vector space
        from fieldguide.errors import ModelMismatch

        try:
            manifest = store.check_manifest(index.model_id, index.backend_id)
        except ModelMismatch as exc:
            raise FieldguideError(
                f"{store.name} also holds other doc sets ({', '.join(store.labels_present()) or 'the unnamed set'}), "
                f"so --reindex rebuilds only this one, with the index's embedding model; but {exc.args[0].split('. ')[0]}. "
                "To change the model, ingest every doc set into a new collection (--collection NAME).") from None
        if manifest:
            summary.chunks_deleted += store.drop_set()
            rebuilt_set = True
    elif reindex:
        store.drop()
        manifest = None
    else:
        manifest = store.check_manifest(index.model_id, index.backend_id)  # ModelMismatch names --reindex
    known = store.file_records() if manifest else {}
    stored = store.source_counts() if manifest else {}  # what is really there (a killed run leaves more)
    # chunks read in another dialect are read again, as after a change of the chunker (a manifest
    # that names none was written before dialects, when every folder read as CommonMark)
    same_chunker = (bool(manifest) and manifest.get("chunker_version") == CHUNKER_VERSION
                    and (manifest.get("docs_dialect") or DEFAULT_DIALECT) == dialect.name)

    # the feed reads, hashes and chunks what changed while the model encodes
    seen = {source for source, _ in files}
    summary.files_seen = len(files)
    if manifest:
        refuse_another_folder(store, docs_dir, known, seen)
    feed = ChunkFeed(files, known, same_chunker,
                     lambda: Chunker(settings, token_pass=token_pass, label=label, dialect=dialect),
                     stored=stored).start()
    # a rebuilt set's chunks left without being counted out: the statistics are counted again
    terms = TermChangeLog(store, stored, (lambda: None) if rebuilt_set else lambda: _stored_term_stats(store, manifest))
    try:
        gone = sorted((set(known) | set(stored)) - seen)
        first = feed.get()
        if gone or first is not None:
            terms.begin()

        # 2. files gone from the folder (and chunks of sources an interrupted run never recorded)
        for source in gone:
            terms.before_replacing(source)
            summary.chunks_deleted += store.delete_source(source)
            summary.files_deleted += source in known
        store.delete_files([source for source in gone if source in known])

        # 3. chunk, embed and store what changed; the model is loaded only when something did
        if first is not None or not manifest:
            _write_files(feed, first, settings, store, embeddings, summary, manifest, index, progress, log, terms)
        else:
            feed.join()
    finally:
        feed.stop()
    counts = feed.counts
    summary.files_skipped, summary.files_changed, summary.files_added = (
        counts.files_skipped, counts.files_changed, counts.files_added)
    summary.chunks_deleted += counts.chunks_replaced
    folder = str(docs_dir.resolve())
    if store.docs_root() != folder:
        store.set_docs_root(folder)
    changed = bool(first is not None or gone or rebuilt_set)
    summary.calibration = _profile(settings, store, embeddings, changed=changed, log=log,
                                   terms=terms, changed_chunks=summary.chunks_written + summary.chunks_deleted)
    if label:
        _label_profile(settings, store, embeddings, label, changed=changed, log=log)
    if changed and store.exists() and hasattr(store, "set_ingest_stamp"):
        store.set_ingest_stamp()
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary


def _other_sets(store) -> bool:
    """Whether the collection holds doc sets other than the store's own."""
    labels_present = getattr(store, "labels_present", None)
    if labels_present is None or not store.exists():
        return False
    label = getattr(store, "label", None)
    present = set(labels_present())
    return bool(present - {label}) or (label is not None and store.for_label(None).source_counts() != {})


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


def refuse_another_folder(store, docs_dir: Path, known: dict, seen: set[str]) -> None:
    """Refuse to mirror `docs_dir` onto a collection that holds another folder's documents.

    The same folder (as recorded), or one that has at least half of the collection's files
    (the same docs, moved; a collection from before folders were recorded that shares files
    with it) is fine; anything else would have its files deleted by the mirroring.
    """
    recorded = store.docs_root()
    if not known or recorded == str(docs_dir.resolve()):
        return
    shared = len(set(known) & seen)
    if shared and (recorded is None or shared * 2 >= len(known)):
        return
    label = getattr(store, "label", None)
    what = f"Doc set {label} of collection {store.name}" if label else f"Collection {store.name}"
    raise FieldguideError(
        f"{what} holds {len(known)} files from {recorded or 'another folder'}, and {docs_dir} "
        f"has {shared} of them: ingesting it would delete the others. Ingest it into a collection of its own "
        f"(--collection NAME) or as a doc set of its own (--label NAME), or replace the contents with "
        f"`fieldguide ingest {docs_dir} --reindex" + (f" --label {label}`." if label else "`."))


@dataclass(frozen=True)
class _IndexIdentity:
    """What the manifest records about how the index is built."""
    model_id: str
    backend_id: str
    chunker_version: str
    docs_dialect: str = "commonmark"


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


def _write_files(feed, first, settings, store, embeddings, summary, manifest, index, progress, log, terms):
    from fieldguide.embedding import embedding_backend_id, embedding_dimension, load_embeddings
    from fieldguide.store import mismatch_message

    # the feed goes on chunking on its thread while the model loads
    embeddings = embeddings or load_embeddings(settings)
    # the backend as loaded: on a machine's first start the model measures which arithmetic it
    # runs in, which the id read before loading could only guess (the same vector space either way)
    index = replace(index, backend_id=embedding_backend_id(settings))
    dimension = embedding_dimension(embeddings)
    store.ensure_collections()
    if manifest is None:
        store.set_manifest(index.model_id, dimension, index.chunker_version, index.backend_id, index.docs_dialect)
    elif int(manifest.get("dimension") or dimension) != dimension:
        raise FieldguideError(mismatch_message(store.name, f"{manifest['embedding_model']} "
                                               f"(dimension {manifest['dimension']})", index.model_id))
    elif (manifest.get("chunker_version"), manifest.get("docs_dialect")) != (index.chunker_version,
                                                                             index.docs_dialect):
        store.set_manifest(index.model_id, dimension, index.chunker_version, index.backend_id, index.docs_dialect)

    # 4. embed and insert in rounds, longest texts first among those chunked so far, so each
    # model batch pads little (once the model is loaded the feed is usually done, and the
    # order is global). One writer thread stores round n while the model embeds round n + 1
    # (at most one round in flight); every store call of the loop is on that thread.
    pending: dict[str, _PendingFile] = {}
    pool: list = []
    done_files: list[_PendingFile] = []  # files whose every chunk is embedded, or with none
    bar = _progress_bar(progress)
    files_done = 0
    feed_open = True

    def take(changed) -> None:
        for warning in changed.warnings:
            log(f"warning: {changed.source}: {warning}")
        entry = _PendingFile(changed.source, changed.sha256, [c.uuid for c in changed.chunks],
                             len(changed.chunks), replaces=changed.replaces)
        pending[changed.source] = entry
        if not changed.chunks:
            done_files.append(entry)  # an empty page: done already
        pool.extend(changed.chunks)
        if bar is not None:
            bar.total += len(changed.chunks)

    def store_round(batch, vectors, empty) -> int:
        for source in dict.fromkeys(c.source for c in batch):
            if pending[source].replaces:
                terms.before_replacing(source)
        for entry in empty:
            if entry.replaces:
                terms.before_replacing(entry.source)
        if batch:
            terms.added(batch)
            store.insert_chunks([c.to_record() for c in batch], vectors)
        finished = list(empty)
        for chunk in batch:
            entry = pending[chunk.source]
            entry.remaining -= 1
            if entry.remaining == 0:
                finished.append(entry)
        _finish_files(finished, store)
        return len(finished)

    def settle(future, size: int) -> None:
        nonlocal files_done
        try:
            files_done += future.result()  # re-raises the writer's error here
        except FieldguideError as exc:
            # the files recorded so far have every chunk stored; the rest have no record yet
            raise type(exc)(f"{exc} ({files_done} of {len(pending)} changed files were stored completely "
                            "and are kept; re-run the same command to redo the rest)") from exc
        summary.chunks_written += size
        if bar is not None:
            bar.update(size)
            bar.set_postfix_str(f"files {files_done}/{len(pending)}")

    def gather() -> None:
        """Wait for a round's worth of chunks (or the feed's end), then take what else is ready."""
        nonlocal feed_open
        while feed_open:
            try:
                changed = feed.get(block=len(pool) < TEXTS_PER_ROUND)
            except queue.Empty:
                return
            if changed is None:
                feed_open = False
            else:
                take(changed)

    if first is not None:
        take(first)
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="fieldguide-writer") as writer:
            in_flight = None
            while True:
                gather()
                if not pool and not done_files:
                    break
                pool.sort(key=lambda c: -c.token_count)
                batch, pool[:] = pool[:TEXTS_PER_ROUND], pool[TEXTS_PER_ROUND:]
                empty, done_files[:] = list(done_files), []
                vectors = embeddings.embed_documents([c.embed_text for c in batch]) if batch else []
                summary.texts_embedded += len(batch)
                if in_flight is not None:
                    settle(*in_flight)
                in_flight = (writer.submit(store_round, batch, vectors, empty), len(batch))
                # the writer holds the only references now; trim what a large round freed (a full
                # collection costs about 0.1 s, as much as embedding a one-file change)
                large = len(batch) >= TEXTS_PER_ROUND // 4
                del batch, vectors, empty
                if large:
                    release_memory()
            if in_flight is not None:
                settle(*in_flight)
    finally:
        if bar is not None:
            bar.close()
    return summary


def _finish_files(finished, store) -> None:
    """Delete chunks an older version had and this one has not, then record the file as done."""
    for entry in finished:
        if entry.replaces:
            store.delete_source(entry.source, keep_uuids=entry.chunk_uuids)
    store.set_files([(e.source, e.sha256, len(e.chunk_uuids)) for e in finished])


def _progress_bar(enabled: bool):
    """A bar whose total grows as the feed chunks files."""
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=0, unit="chunk", desc="embedding", file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
