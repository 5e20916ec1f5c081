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
from ingest.profile import TermChangeLog, _label_profile, _profile, _stored_term_stats

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
    from ingest.chunker import Chunker
    from ingest.dialects import DEFAULT_DIALECT
    from ingest.feed import ChunkFeed

    started = time.perf_counter()
    docs_dir = Path(docs_dir)
    summary = IngestSummary()

    files, dialect, index = _read_folder(docs_dir, settings)
    label = getattr(store, "label", None)
    manifest, rebuilt_set = _open_index(store, index, reindex, summary)
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


def _read_folder(docs_dir: Path, settings):
    """1. What is there: the folder's Markdown files (source -> path), its dialect (read from its
    files, or set), which decides how they read, and the index they make."""
    from ingest.chunk import CHUNKER_VERSION
    from ingest.chunker import iter_markdown_files
    from ingest.dialects import folder_dialect_of

    from fieldguide.embedding import embedding_backend_id, embedding_model_id

    files = [(path.relative_to(docs_dir).as_posix(), path) for path in iter_markdown_files(docs_dir)]
    try:
        dialect = folder_dialect_of(docs_dir, [path for _, path in files], getattr(settings, "docs_dialect", None))
    except ValueError as exc:  # FIELDGUIDE_DOCS_DIALECT names no dialect
        raise FieldguideError(f"FIELDGUIDE_DOCS_DIALECT: {exc}") from None
    index = _IndexIdentity(embedding_model_id(settings), embedding_backend_id(settings), CHUNKER_VERSION,
                           dialect.name)
    return files, dialect, index


def _open_index(store, index: _IndexIdentity, reindex: bool, summary: IngestSummary):
    """The manifest the run builds on (None: the index is built from nothing) and whether this doc
    set was dropped to be rebuilt beside others; `--reindex` drops what it rebuilds."""
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
    return manifest, rebuilt_set


def _other_sets(store) -> bool:
    """Whether the collection holds doc sets other than the store's own."""
    labels_present = getattr(store, "labels_present", None)
    if labels_present is None or not store.exists():
        return False
    label = getattr(store, "label", None)
    present = set(labels_present())
    return bool(present - {label}) or (label is not None and store.for_label(None).source_counts() != {})


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


def _write_files(feed, first, settings, store, embeddings, summary, manifest, index, progress, log, terms):
    embeddings = _ready_to_write(settings, store, embeddings, manifest, index)

    # 4. embed and insert in rounds, longest texts first among those chunked so far, so each
    # model batch pads little (once the model is loaded the feed is usually done, and the
    # order is global). One writer thread stores round n while the model embeds round n + 1
    # (at most one round in flight); every store call of the loop is on that thread.
    rounds = _WriteRounds(feed, store, summary, log, terms, _progress_bar(progress))
    if first is not None:
        rounds.take(first)
    try:
        rounds.run(embeddings)
    finally:
        if rounds.bar is not None:
            rounds.bar.close()
    return summary


def _ready_to_write(settings, store, embeddings, manifest, index):
    """The embedding model, loaded, and the collections and manifest ready for its vectors."""
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
    return embeddings


class _WriteRounds:
    """The changed files on their way into the store: their chunks pooled as the feed delivers
    them, embedded a round at a time, each round stored on the writer thread."""

    def __init__(self, feed, store, summary, log, terms, bar) -> None:
        self.feed, self.store, self.summary, self.log, self.terms, self.bar = feed, store, summary, log, terms, bar
        self.pending: dict[str, _PendingFile] = {}
        self.pool: list = []
        self.done_files: list[_PendingFile] = []  # files whose every chunk is embedded, or with none
        self.files_done = 0
        self.feed_open = True

    def take(self, changed) -> None:
        for warning in changed.warnings:
            self.log(f"warning: {changed.source}: {warning}")
        entry = _PendingFile(changed.source, changed.sha256, [c.uuid for c in changed.chunks],
                             len(changed.chunks), replaces=changed.replaces)
        self.pending[changed.source] = entry
        if not changed.chunks:
            self.done_files.append(entry)  # an empty page: done already
        self.pool.extend(changed.chunks)
        if self.bar is not None:
            self.bar.total += len(changed.chunks)

    def store_round(self, batch, vectors, empty) -> int:
        for source in dict.fromkeys(c.source for c in batch):
            if self.pending[source].replaces:
                self.terms.before_replacing(source)
        for entry in empty:
            if entry.replaces:
                self.terms.before_replacing(entry.source)
        if batch:
            self.terms.added(batch)
            self.store.insert_chunks([c.to_record() for c in batch], vectors)
        finished = list(empty)
        for chunk in batch:
            entry = self.pending[chunk.source]
            entry.remaining -= 1
            if entry.remaining == 0:
                finished.append(entry)
        _finish_files(finished, self.store)
        return len(finished)

    def settle(self, future, size: int) -> None:
        try:
            self.files_done += future.result()  # re-raises the writer's error here
        except FieldguideError as exc:
            # the files recorded so far have every chunk stored; the rest have no record yet
            raise type(exc)(f"{exc} ({self.files_done} of {len(self.pending)} changed files were stored "
                            "completely and are kept; re-run the same command to redo the rest)") from exc
        self.summary.chunks_written += size
        if self.bar is not None:
            self.bar.update(size)
            self.bar.set_postfix_str(f"files {self.files_done}/{len(self.pending)}")

    def gather(self) -> None:
        """Wait for a round's worth of chunks (or the feed's end), then take what else is ready."""
        while self.feed_open:
            try:
                changed = self.feed.get(block=len(self.pool) < TEXTS_PER_ROUND)
            except queue.Empty:
                return
            if changed is None:
                self.feed_open = False
            else:
                self.take(changed)

    def run(self, embeddings) -> None:
        pool, done_files = self.pool, self.done_files
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="fieldguide-writer") as writer:
            in_flight = None
            while True:
                self.gather()
                if not pool and not done_files:
                    break
                pool.sort(key=lambda c: -c.token_count)
                batch, pool[:] = pool[:TEXTS_PER_ROUND], pool[TEXTS_PER_ROUND:]
                empty, done_files[:] = list(done_files), []
                vectors = embeddings.embed_documents([c.embed_text for c in batch]) if batch else []
                self.summary.texts_embedded += len(batch)
                if in_flight is not None:
                    self.settle(*in_flight)
                in_flight = (writer.submit(self.store_round, batch, vectors, empty), len(batch))
                # the writer holds the only references now; trim what a large round freed (a full
                # collection costs about 0.1 s, as much as embedding a one-file change)
                large = len(batch) >= TEXTS_PER_ROUND // 4
                del batch, vectors, empty
                if large:
                    release_memory()
            if in_flight is not None:
                self.settle(*in_flight)


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
