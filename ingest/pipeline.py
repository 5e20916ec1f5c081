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

When nothing changed, the embedding model is never loaded: an unchanged re-run costs a
directory walk, the hashes and two queries.
"""
from __future__ import annotations

import ctypes
import gc
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
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
                  store=None, embeddings=None, log=None, token_pass: bool = True, wait: bool = True) -> IngestSummary:
    """Bring the store's collection in line with `docs_dir`. Returns the run's counts.

    `store` (a ChunkStore) and `embeddings` may be passed in (tests, long-lived services);
    otherwise they are opened here. `token_pass=False` only serves to measure what the
    token-safe pass buys (`fieldguide eval --ablate`, into a collection of its own).
    While another ingest of the collection runs, this one waits (`wait=False`: IngestBusy).
    """
    if not Path(docs_dir).is_dir():
        raise FieldguideError(f"{docs_dir} is not a directory.")
    if store is None:
        from fieldguide.store import open_store

        with open_store(settings) as opened:
            return ingest_folder(docs_dir, settings, reindex=reindex, progress=progress,
                                 store=opened, embeddings=embeddings, log=log, token_pass=token_pass, wait=wait)

    from ingest.lock import ingest_lock

    log = log or (lambda message: print(message, file=sys.stderr))
    with ingest_lock(settings.model_copy(update={"collection": store.name}), wait=wait, log=log):
        return _ingest(Path(docs_dir), settings, store, embeddings, reindex, progress, log, token_pass)


def _ingest(docs_dir: Path, settings, store, embeddings, reindex, progress, log, token_pass) -> IngestSummary:
    from ingest.chunk import CHUNKER_VERSION
    from ingest.chunker import file_sha256, iter_markdown_files

    from fieldguide.embedding import embedding_model_id

    started = time.perf_counter()
    docs_dir = Path(docs_dir)
    summary = IngestSummary()

    model_id = embedding_model_id(settings)
    if reindex:
        store.drop()
        manifest = None
    else:
        manifest = store.check_manifest(model_id)  # ModelMismatch names --reindex
    known = store.file_records() if manifest else {}
    stored = store.source_counts() if manifest else {}  # what is really there (a killed run leaves more)
    same_chunker = bool(manifest) and manifest.get("chunker_version") == CHUNKER_VERSION

    # 1. what changed: hash the raw bytes of every file
    to_chunk: list[tuple[str, bytes, str]] = []
    seen: set[str] = set()
    changed: set[str] = set()
    for path in iter_markdown_files(docs_dir):
        source = path.relative_to(docs_dir).as_posix()
        raw = path.read_bytes()
        sha = file_sha256(raw)
        seen.add(source)
        summary.files_seen += 1
        record = known.get(source)
        if record is None:
            summary.files_added += 1
            if stored.get(source):  # chunks of an interrupted run: replaced, leftovers deleted
                changed.add(source)
        elif record["sha256"] == sha and same_chunker and stored.get(source, 0) == record["chunk_count"]:
            summary.files_skipped += 1
            continue
        else:
            summary.files_changed += 1
            summary.chunks_deleted += record["chunk_count"]
            changed.add(source)
        to_chunk.append((source, raw, sha))
    if manifest:
        refuse_another_folder(store, docs_dir, known, seen)
    gone = sorted((set(known) | set(stored)) - seen)

    # 2. files gone from the folder (and chunks of sources an interrupted run never recorded)
    for source in gone:
        summary.chunks_deleted += store.delete_source(source)
        summary.files_deleted += source in known
    store.delete_files([source for source in gone if source in known])

    if to_chunk or not manifest:
        summary = _write_files(to_chunk, changed, settings, store, embeddings, summary, manifest,
                               model_id, progress, log, token_pass)
    folder = str(docs_dir.resolve())
    if store.docs_root() != folder:
        store.set_docs_root(folder)
    summary.calibration = _profile(settings, store, embeddings, changed=bool(to_chunk or gone), log=log)
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary


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
    raise FieldguideError(
        f"Collection {store.name} holds {len(known)} files from {recorded or 'another folder'}, and {docs_dir} "
        f"has {shared} of them: ingesting it would delete the others. Ingest it into a collection of its own "
        f"(--collection NAME), or replace the collection's contents with `fieldguide ingest {docs_dir} --reindex`.")


def _profile(settings, store, embeddings, *, changed: bool, log) -> dict | None:
    """The index's calibration: measured and stored when the index changed or has none for the
    active scorer (or prompts), else the stored one. None for an index that was never built."""
    from fieldguide.calibration import CALIBRATION_VERSION, profile_index, scorer_scale
    from fieldguide.embedding import embedding_prompts, load_embeddings
    from fieldguide.reranker import load_reranker

    if not store.exists():
        return None
    reranker = load_reranker(settings)
    query_prompt, passage_prompt = embedding_prompts(settings)
    stored = (store.manifest() or {}) if not changed else {}
    calibration = stored.get("calibration")
    if (isinstance(calibration, dict) and calibration.get("version") == CALIBRATION_VERSION
            and calibration.get("scorer") == scorer_scale(reranker)):
        return calibration
    embeddings = embeddings or load_embeddings(settings)
    measured, term_stats = profile_index(store, embeddings, reranker)
    store.ensure_collections()  # an older manifest collection gains the profile's properties
    store.set_index_profile(measured.to_dict(), term_stats, query_prompt, passage_prompt)
    log(f"calibrated {store.name}: rerank_min {measured.rerank_min}, abstain_margin {measured.abstain_margin}, "
        f"screen share {measured.screen_share} ({measured.probes} probes, {scorer_scale(reranker)})")
    return measured.to_dict()


def _write_files(to_chunk, changed, settings, store, embeddings, summary, manifest, model_id, progress, log,
                 token_pass=True):
    from ingest.chunk import CHUNKER_VERSION
    from ingest.chunker import Chunker

    from fieldguide.embedding import embedding_dimension, load_embeddings
    from fieldguide.store import mismatch_message

    # 3. chunk every added/changed file (fast, no model needed)
    chunker = Chunker(settings, token_pass=token_pass)
    pending: dict[str, _PendingFile] = {}
    chunks = []
    for source, raw, sha in to_chunk:
        chunked = chunker.chunk_bytes(raw, source)
        for warning in chunked.warnings:
            log(f"warning: {source}: {warning}")
        pending[source] = _PendingFile(source, sha, [c.uuid for c in chunked.chunks], len(chunked.chunks),
                                       replaces=source in changed)
        chunks.extend(chunked.chunks)
    del to_chunk

    embeddings = embeddings or load_embeddings(settings)
    dimension = embedding_dimension(embeddings)
    store.ensure_collections()
    if manifest is None:
        store.set_manifest(model_id, dimension, CHUNKER_VERSION)
    elif int(manifest.get("dimension") or dimension) != dimension:
        raise FieldguideError(mismatch_message(store.name, f"{manifest['embedding_model']} "
                                               f"(dimension {manifest['dimension']})", model_id))
    elif manifest.get("chunker_version") != CHUNKER_VERSION:
        store.set_manifest(model_id, dimension, CHUNKER_VERSION)

    # files with no chunks at all (empty pages) are done already
    _finish_files([p for p in pending.values() if p.remaining == 0], store)

    # 4. embed and insert, longest texts first so each model batch pads little. One writer
    # thread stores round n while the model embeds round n + 1 (at most one round in flight).
    chunks.sort(key=lambda c: -c.token_count)
    bar = _progress_bar(len(chunks), len(pending), enabled=progress)
    files_done = sum(1 for p in pending.values() if p.remaining == 0)

    def store_round(batch, vectors) -> int:
        store.insert_chunks([c.to_record() for c in batch], vectors)
        finished = []
        for chunk in batch:
            entry = pending[chunk.source]
            entry.remaining -= 1
            if entry.remaining == 0:
                finished.append(entry)
        _finish_files(finished, store)
        return len(finished)

    def settle(future, size: int) -> None:
        nonlocal files_done
        files_done += future.result()  # re-raises the writer's error here
        summary.chunks_written += size
        if bar is not None:
            bar.update(size)
            bar.set_postfix_str(f"files {files_done}/{len(pending)}")

    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="fieldguide-writer") as writer:
            in_flight = None
            for start in range(0, len(chunks), TEXTS_PER_ROUND):
                batch = chunks[start:start + TEXTS_PER_ROUND]
                vectors = embeddings.embed_documents([c.embed_text for c in batch])
                summary.texts_embedded += len(batch)
                if in_flight is not None:
                    settle(*in_flight)
                in_flight = (writer.submit(store_round, batch, vectors), len(batch))
                # the writer holds the only references now; free the list slots and trim
                chunks[start:start + TEXTS_PER_ROUND] = [None] * len(batch)
                del batch, vectors
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


def _progress_bar(total_chunks: int, total_files: int, enabled: bool):
    if not enabled or total_chunks == 0:
        return None
    from tqdm import tqdm

    bar = tqdm(total=total_chunks, unit="chunk", desc="embedding", file=sys.stderr, dynamic_ncols=True,
               mininterval=0.5)
    bar.set_postfix_str(f"files 0/{total_files}")
    return bar
