"""The chunk store: one Weaviate collection of chunks plus two small companions.

* `<Collection>` holds the chunks: every field of the chunk record as a typed property, the
  vector supplied by fieldguide (no vectorizer), HNSW with cosine distance.
* `<Collection>Manifest` holds one object describing how the index was built (embedding model
  id, dimension, chunker version, embedding backend, the embedding prompts), so a query or an
  ingest with another model or backend is refused instead of silently comparing vectors from two
  different spaces. The same object carries the index's calibration (`fieldguide.calibration`),
  and a second object its term statistics (`fieldguide.bm25`), kept apart because they are large
  and read once.
* `<Collection>Files` holds one object per source file (sha256 of its raw bytes, chunk count):
  what incremental ingest compares against.

Doc sets (labels): one collection may hold several labelled doc sets (`v1`, `v2`, `admin-guide`),
each ingested from its own folder, beside the unnamed set (chunks with no label, as every index
had before labels). A chunk and a file record carry their set's `label`; a store made
`for_label(name)` reads and writes only that set's files and chunks (an ingest), so mirroring one
folder never deletes another set's; a store `limited_to(labels)` searches only those sets (a
Weaviate filter). Each label has a small object of its own in the manifest collection: its docs
folder and its calibration.

`open_store()` connects to `FIELDGUIDE_WEAVIATE_URL` when set, otherwise to the locally managed
server (`fieldguide.weaviate_server`), starting it when needed. Either may be several nodes: every
call then runs on a node that answers (`fieldguide.weaviate_nodes`), the collections are created
with `FIELDGUIDE_REPLICATION_FACTOR` copies of each object and read and written at
`FIELDGUIDE_CONSISTENCY_LEVEL`, so losing a node loses no chunk and fails no question.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import threading
import uuid as uuidlib
from collections.abc import Iterator, Sequence

from fieldguide.errors import ModelMismatch, StoreUnavailable

MANIFEST_UUID = "00000000-0000-5000-8000-000000000001"
# Manifests written before the backend was recorded: every index was then built by
# sentence-transformers on torch.
LEGACY_EMBEDDING_BACKEND = "torch"
TERM_STATS_UUID = "00000000-0000-5000-8000-000000000002"
# Manifest properties added after the first release: an older manifest collection gets them
# added when the index is next written, and reads without them see None.
PROFILE_PROPERTIES = ("calibration", "query_prompt", "passage_prompt", "term_stats", "ingest_stamp")
FILE_NAMESPACE = uuidlib.UUID("0f6b9a51-7c2e-5d4f-9a3b-1e2d3c4b5a69")
LABEL_NAMESPACE = uuidlib.UUID("3c1f0e7a-2b9d-5e84-a6c1-7d5e4f3a2b10")
# How long a store that found no `label` property on its collection (an index from before labels)
# trusts that: a labelled ingest by another process adds it.
LABEL_PROPERTY_RECHECK_SECONDS = 30.0

# chunk record fields (ingest.chunk.RECORD_FIELDS; docs/architecture.md) and how Weaviate stores them
TEXT_FIELDS_FILTERED = ("chunk_id", "group_id", "chunk_type", "content_kind", "source")
INT_FIELDS = ("part_index", "part_count", "line_start", "line_end", "token_count")
# How many same-named sections of one file `section_intros` looks through.
INTRO_OCCURRENCES = 4
CHUNK_FIELDS = (
    "chunk_id", "group_id", "part_index", "part_count", "chunk_type", "content_kind", "source",
    "line_start", "line_end", "heading_path", "text", "embed_text", "token_count", "images",
    "reading", "page_title",
)
# Chunk properties added after the first release: a collection made before them gets them added
# (its chunks are written again anyway, since the chunker version changed with them).
ADDED_CHUNK_FIELDS = ("reading", "page_title")
# What a search returns of each chunk: `embed_text` (the breadcrumb and the text again, what was
# embedded) is not read after the search, and leaving it out halves what each query carries back.
SEARCH_FIELDS = tuple(name for name in CHUNK_FIELDS if name != "embed_text")

# Searches of one question sent together (`ChunkStore.searches`) wait on each other's round trip
# in these threads instead of one after another; the caller's own thread sends the first.
_SEARCH_THREADS = 3
_search_pool: concurrent.futures.ThreadPoolExecutor | None = None
_search_pool_lock = threading.Lock()


def _search_threads() -> concurrent.futures.ThreadPoolExecutor:
    global _search_pool
    with _search_pool_lock:
        if _search_pool is None:
            _search_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=_SEARCH_THREADS, thread_name_prefix="fieldguide-search")
        return _search_pool


def file_uuid(source: str, label: str | None = None) -> str:
    """A file record's UUID; a labelled set's records live beside the unnamed set's (same paths)."""
    return str(uuidlib.uuid5(FILE_NAMESPACE, f"@{label}\x1f{source}" if label else source))


def label_uuid(label: str) -> str:
    """The UUID of a label's object in the manifest collection (its folder and calibration)."""
    return str(uuidlib.uuid5(LABEL_NAMESPACE, label))


def collection_name(name: str) -> str:
    """Weaviate class names start with a capital letter; keep the rest as given."""
    name = name.strip()
    if not name or not (name[0].isalpha() and name.replace("_", "").isalnum()):
        raise StoreUnavailable(f"Invalid collection name {name!r}: use letters, digits and underscores.")
    return name[0].upper() + name[1:]


def mismatch_message(collection: str, built_with: str, configured: str) -> str:
    return (
        f"Collection {collection} was built with embedding model {built_with!r}, but the configured "
        f"model is {configured!r}. Rebuild it with `fieldguide ingest DOCS_DIR --reindex`, or set "
        f"FIELDGUIDE_EMBEDDING_MODEL={built_with} to use the index as it is.")


_on_a_node = threading.local()  # set while a store call runs: calls it makes run as part of it


WRITE_DEADLINE_SECONDS = 300.0  # a write of a batch may take long on a busy machine: only queries are hurried


def on_a_node(method=None, *, deadline: float | None = None):
    """Run a store method on a node that answers (see `NodeSet.call`); nested calls share it.
    Queries get the short deadline; `@on_a_node(deadline=...)` marks slower writes."""
    if method is None:
        return functools.partial(on_a_node, deadline=deadline)

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        if self.nodes is None or getattr(_on_a_node, "active", False):
            return method(self, *args, **kwargs)

        def operation():
            _on_a_node.active = True
            try:
                return method(self, *args, **kwargs)
            finally:
                _on_a_node.active = False

        patient = WRITE_DEADLINE_SECONDS if self.patient else None
        return self.nodes.call(operation, method.__name__, deadline=deadline or patient)
    return run


writing = on_a_node(deadline=WRITE_DEADLINE_SECONDS)


def backend_mismatch_message(collection: str, built_with: str, configured: str) -> str:
    backend = built_with.split("-", 1)[0]
    quantization = built_with.split("-", 1)[1] if "-" in built_with else None
    if quantization == "bf16":  # the fp32 graph in OpenVINO's bf16 arithmetic
        quantization = "none FIELDGUIDE_EMBEDDING_RUNTIME=openvino"
    use_as_is = f"FIELDGUIDE_EMBEDDING_BACKEND={backend}" + (
        f" FIELDGUIDE_EMBEDDING_QUANTIZATION={quantization}" if quantization else "")
    return (
        f"Collection {collection} was built with the {built_with!r} embedding backend, but the configured "
        f"backend is {configured!r}; their vectors differ. Rebuild it with `fieldguide ingest DOCS_DIR "
        f"--reindex`, or set {use_as_is} to use the index as it is.")


class ChunkStore:
    def __init__(self, client, name: str, *, nodes=None, replication_factor: int = 1,
                 consistency_level: str | None = None):
        self._client = client
        self.nodes = nodes  # a NodeSet: the client is then the one of the node in use
        self.name = collection_name(name)
        self.manifest_name = f"{self.name}Manifest"
        self.files_name = f"{self.name}Files"
        self.replication_factor = int(replication_factor or 1)
        self.consistency_level = consistency_level
        self._seen_collection = False  # once it exists, read paths stop asking (a round trip each)
        # While an ingest runs, every call may wait as long as a write: for some seconds after a
        # node dies (a new Raft leader, the others noticing) no node answers within a query's
        # deadline, and an ingest would rather wait than fail (`ingesting`).
        self.patient = False
        self.label: str | None = None  # the doc set this store reads and writes files of (`for_label`)
        self.labels: tuple[str, ...] | None = None  # searches see only these sets (`limited_to`)
        self._label_property_seen: tuple[float, bool] | None = None

    def for_label(self, label: str | None) -> "ChunkStore":
        """This store for one doc set's files: its file records, its chunks by source, its docs
        folder (None: the unnamed set). Searches and counts are not limited by it."""
        import copy

        scoped = copy.copy(self)
        scoped.label = label or None
        return scoped

    def limited_to(self, labels: Sequence[str] | None) -> "ChunkStore":
        """This store with searches (and counts) limited to the chunks of `labels`; None or empty:
        every chunk."""
        import copy

        scoped = copy.copy(self)
        scoped.labels = tuple(dict.fromkeys(labels)) if labels else None
        return scoped

    @contextlib.contextmanager
    def ingesting(self):
        """Store calls made inside wait like writes (see `patient`)."""
        before, self.patient = self.patient, True
        try:
            yield self
        finally:
            self.patient = before

    @property
    def client(self):
        return self.nodes.client if self.nodes is not None else self._client

    def _use(self, name: str):
        collection = self.client.collections.use(name)
        if self.consistency_level:
            from weaviate.classes.config import ConsistencyLevel

            collection = collection.with_consistency_level(ConsistencyLevel(self.consistency_level.upper()))
        return collection

    # --- collections ------------------------------------------------------------------
    @property
    def chunks(self):
        return self._use(self.name)

    @on_a_node
    def exists(self) -> bool:
        if not self._seen_collection:
            self._seen_collection = self.client.collections.exists(self.name)
        return self._seen_collection

    def _replication(self):
        if self.replication_factor <= 1:
            return None
        from weaviate.classes.config import Configure, ReplicationDeletionStrategy

        # a chunk deleted while a node was down stays deleted when that node catches up
        return Configure.replication(factor=self.replication_factor,
                                     deletion_strategy=ReplicationDeletionStrategy.TIME_BASED_RESOLUTION)

    @writing
    def ensure_collections(self) -> None:
        """Create the three collections if missing (explicit schema, never auto-schema)."""
        from weaviate.classes.config import Configure, DataType, Property, Tokenization, VectorDistances

        def text(name, *, searchable=False, filterable=True, array=False):
            return Property(
                name=name, data_type=DataType.TEXT_ARRAY if array else DataType.TEXT,
                tokenization=Tokenization.WORD if searchable else Tokenization.FIELD,
                index_filterable=filterable, index_searchable=searchable, skip_vectorization=True)

        def integer(name, *, filterable=False):
            return Property(name=name, data_type=DataType.INT, index_filterable=filterable,
                            index_range_filters=False, skip_vectorization=True)

        no_vectors = Configure.Vectors.self_provided(
            vector_index_config=Configure.VectorIndex.flat(distance_metric=VectorDistances.COSINE))
        if not self.client.collections.exists(self.name):
            self.client.collections.create(
                self.name,
                description="fieldguide chunks: Markdown sections with their breadcrumb and metadata",
                vector_config=Configure.Vectors.self_provided(
                    vector_index_config=Configure.VectorIndex.hnsw(distance_metric=VectorDistances.COSINE)),
                inverted_index_config=Configure.inverted_index(index_null_state=False),
                replication_config=self._replication(),
                properties=[
                    text("chunk_id"),
                    text("group_id"),
                    integer("part_index"),
                    integer("part_count"),
                    text("chunk_type"),
                    text("content_kind"),
                    text("source"),
                    integer("line_start"),
                    integer("line_end"),
                    text("heading_path", searchable=True, array=True),
                    text("text", searchable=True, filterable=False),
                    text("embed_text", searchable=True, filterable=False),
                    integer("token_count"),
                    text("images", array=True, filterable=False),
                    text("label"),
                    text("reading", searchable=True, filterable=False),
                    text("page_title", searchable=True, filterable=False),
                ],
            )
        else:
            self._add_missing(self.name, [text("label"), *(text(name, searchable=True, filterable=False)
                                                          for name in ADDED_CHUNK_FIELDS)])
        self._label_property_seen = (0.0, True)
        added = [text("embedding_backend"), text("label"), text("docs_dialect"),
                 *(text(name, filterable=False) for name in PROFILE_PROPERTIES)]
        if not self.client.collections.exists(self.manifest_name):
            self.client.collections.create(
                self.manifest_name, description=f"how {self.name} was built",
                vector_config=no_vectors, replication_config=self._replication(),
                properties=[text("embedding_model"), integer("dimension"), text("chunker_version"),
                            text("docs_root"), *added])
        else:  # a manifest from before the backend or profile properties: add what it lacks
            self._add_missing(self.manifest_name, added)
        if not self.client.collections.exists(self.files_name):
            self.client.collections.create(
                self.files_name, description=f"source files ingested into {self.name}",
                vector_config=no_vectors, replication_config=self._replication(),
                properties=[text("source"), text("sha256"), integer("chunk_count"), text("label")])
        else:
            self._add_missing(self.files_name, [text("label")])

    def _add_missing(self, name: str, properties) -> None:
        """Add to collection `name` those of `properties` it lacks (an index from an older release)."""
        collection = self._use(name)
        present = {prop.name for prop in collection.config.get().properties}
        for prop in properties:
            if prop.name not in present:
                collection.config.add_property(prop)

    def _has_label_property(self) -> bool:
        """Whether the chunks carry labels at all (an index from before labels has no such property:
        asking for it in a search would fail)."""
        import time

        seen = self._label_property_seen
        now = time.monotonic()
        if seen is not None and (seen[1] or now - seen[0] < LABEL_PROPERTY_RECHECK_SECONDS):
            return seen[1]
        present = self.exists() and any(prop.name == "label" for prop in self.chunks.config.get().properties)
        self._label_property_seen = (now, present)
        return present

    def _search_fields(self) -> list[str]:
        return [*SEARCH_FIELDS, "label"] if self._has_label_property() else list(SEARCH_FIELDS)

    def _read_filter(self, content_kind: str | None = None):
        """The filter of a search: the content kind asked for, within `labels`."""
        from weaviate.classes.query import Filter

        filters = [f for f in (_kind_filter(content_kind), self._labels_filter()) if f is not None]
        if not filters:
            return None
        return filters[0] if len(filters) == 1 else Filter.all_of(filters)

    def _labels_filter(self):
        if not self.labels:
            return None
        from weaviate.classes.query import Filter

        if not self._has_label_property():  # no chunk has a label: none of them is in these sets
            return Filter.by_property("chunk_id").equal("\x00no such chunk")
        return Filter.by_property("label").contains_any(list(self.labels))

    def _set_filter(self):
        """The chunks of this store's doc set (`label`): its label's, or for the unnamed set every
        chunk without a label, i.e. of no label present (None: no filter needed)."""
        from weaviate.classes.query import Filter

        if self.label:
            return Filter.by_property("label").equal(self.label)
        present = self.labels_present()
        return Filter.by_property("label").contains_none(present) if present else None

    @on_a_node
    def labels_present(self) -> list[str]:
        """The labels of the stored chunks (one aggregation)."""
        from weaviate.classes.aggregate import GroupByAggregate

        if not self.exists() or not self._has_label_property():
            return []
        response = self.chunks.aggregate.over_all(group_by=GroupByAggregate(prop="label", limit=10_000),
                                                  total_count=True)
        return sorted(str(group.grouped_by.value) for group in response.groups
                      if group.grouped_by.value and (group.total_count or 0) > 0)

    @on_a_node
    def known_labels(self) -> dict[str, str | None]:
        """label -> the docs folder it was last ingested from, for every label ever ingested (and
        every label a chunk carries, in case an ingest stopped before recording its label)."""
        found: dict[str, str | None] = {}
        if self.client.collections.exists(self.manifest_name):
            manifest = self._use(self.manifest_name)
            if any(prop.name == "label" for prop in manifest.config.get().properties):
                for obj in manifest.iterator(return_properties=["label", "docs_root"]):
                    if obj.properties.get("label"):
                        found[obj.properties["label"]] = obj.properties.get("docs_root") or None
        for label in self.labels_present():
            found.setdefault(label, None)
        return dict(sorted(found.items()))

    @on_a_node
    def label_calibration(self, label: str) -> dict | None:
        """The calibration measured on one label's chunks alone (None: none stored)."""
        if not self.client.collections.exists(self.manifest_name):
            return None
        obj = self._use(self.manifest_name).query.fetch_object_by_id(label_uuid(label))
        return _json_or_none(obj.properties.get("calibration")) if obj is not None else None

    @writing
    def set_label_calibration(self, label: str, calibration: dict) -> None:
        import json

        self._label_object(label)
        self._use(self.manifest_name).data.update(
            uuid=label_uuid(label), properties={"calibration": json.dumps(calibration, sort_keys=True)})

    def _label_object(self, label: str) -> None:
        """Make sure the label has its object in the manifest collection."""
        manifest = self._use(self.manifest_name)
        if not any(prop.name == "label" for prop in manifest.config.get().properties):
            self.ensure_collections()  # a manifest from before labels gains the property
        if not manifest.data.exists(label_uuid(label)):
            manifest.data.insert(properties={"label": label}, uuid=label_uuid(label))

    @writing
    def drop(self) -> None:
        self._seen_collection = False
        self._label_property_seen = None
        for name in (self.name, self.manifest_name, self.files_name):
            if self.client.collections.exists(name):
                self.client.collections.delete(name)

    # --- manifest ---------------------------------------------------------------------
    @on_a_node
    def manifest(self) -> dict | None:
        if not self.client.collections.exists(self.manifest_name):
            return None
        obj = self._use(self.manifest_name).query.fetch_object_by_id(MANIFEST_UUID)
        if obj is None:
            return None
        props = obj.properties
        return {"embedding_model": props.get("embedding_model"), "dimension": props.get("dimension"),
                "chunker_version": props.get("chunker_version"),
                "docs_dialect": props.get("docs_dialect"),
                "embedding_backend": props.get("embedding_backend") or LEGACY_EMBEDDING_BACKEND,
                "calibration": _json_or_none(props.get("calibration")),
                "query_prompt": props.get("query_prompt"), "passage_prompt": props.get("passage_prompt"),
                "ingest_stamp": props.get("ingest_stamp")}

    @writing
    def set_manifest(self, embedding_model: str, dimension: int, chunker_version: str,
                     embedding_backend: str, docs_dialect: str | None = None) -> None:
        """`docs_dialect`: the docs folder's dialect the chunks were read in (`ingest.dialects`)."""
        self.ensure_collections()  # an older manifest collection gains embedding_backend
        manifest = self._use(self.manifest_name)
        properties = {"embedding_model": embedding_model, "dimension": int(dimension),
                      "chunker_version": str(chunker_version), "embedding_backend": str(embedding_backend)}
        if docs_dialect is not None:
            properties["docs_dialect"] = str(docs_dialect)
        existing = manifest.query.fetch_object_by_id(MANIFEST_UUID)
        if existing is not None:  # keep what else the manifest records (the docs folder, ...)
            properties = {**{k: v for k, v in existing.properties.items() if v is not None}, **properties}
            manifest.data.replace(uuid=MANIFEST_UUID, properties=properties)
        else:
            manifest.data.insert(properties=properties, uuid=MANIFEST_UUID)

    # --- which docs folder the collection mirrors --------------------------------------------
    @on_a_node
    def docs_root(self) -> str | None:
        """The folder the collection (this store's doc set) was last ingested from (None: never recorded)."""
        if not self.client.collections.exists(self.manifest_name):
            return None
        obj = self._use(self.manifest_name).query.fetch_object_by_id(
            label_uuid(self.label) if self.label else MANIFEST_UUID)
        return (obj.properties.get("docs_root") or None) if obj is not None else None

    @writing
    def set_docs_root(self, folder: str) -> None:
        """Record the folder in the manifest (collections made before this property get it added)."""
        from weaviate.classes.config import DataType, Property, Tokenization

        collection = self._use(self.manifest_name)
        if "docs_root" not in {prop.name for prop in collection.config.get().properties}:
            collection.config.add_property(Property(
                name="docs_root", data_type=DataType.TEXT, tokenization=Tokenization.FIELD,
                index_filterable=True, index_searchable=False, skip_vectorization=True))
        if self.label:
            self._label_object(self.label)
        collection.data.update(uuid=label_uuid(self.label) if self.label else MANIFEST_UUID,
                               properties={"docs_root": folder})

    @writing
    def source_counts(self) -> dict[str, int]:
        """source -> how many chunks of it are stored (one aggregation)."""
        from weaviate.classes.aggregate import GroupByAggregate

        if not self.exists():
            return {}
        response = self.chunks.aggregate.over_all(group_by=GroupByAggregate(prop="source", limit=1_000_000),
                                                  total_count=True, filters=self._set_filter())
        return {group.grouped_by.value: int(group.total_count or 0) for group in response.groups}

    @writing
    def set_index_profile(self, calibration: dict, term_stats: str | None, query_prompt: str = "",
                          passage_prompt: str = "") -> None:
        """Record the index's calibration, embedding prompts and term statistics (after a write)."""
        import json

        manifest = self._use(self.manifest_name)
        manifest.data.update(uuid=MANIFEST_UUID, properties={
            "calibration": json.dumps(calibration, sort_keys=True), "query_prompt": query_prompt,
            "passage_prompt": passage_prompt})
        properties = {"term_stats": term_stats or ""}
        if manifest.data.exists(TERM_STATS_UUID):
            manifest.data.replace(uuid=TERM_STATS_UUID, properties=properties)
        else:
            manifest.data.insert(properties=properties, uuid=TERM_STATS_UUID)

    @writing
    def set_ingest_stamp(self) -> str:
        """Mark the index as changed by an ingest just now (what caches of the docs key on)."""
        import time

        stamp = f"{time.time():.6f}-{uuidlib.uuid4().hex[:8]}"
        self.ensure_collections()  # an older manifest collection gains the property
        self._use(self.manifest_name).data.update(uuid=MANIFEST_UUID, properties={"ingest_stamp": stamp})
        return stamp

    def iter_chunks(self, labels: Sequence[str] | None = None) -> Iterator[dict]:
        """Every stored chunk record (with its `label`, when it has one); with `labels`, only the
        chunks of those doc sets ("" stands for the unnamed set)."""
        if not self.exists():
            return
        fields = [*SEARCH_FIELDS, "label"] if self._has_label_property() else list(SEARCH_FIELDS)
        wanted = set(labels) if labels is not None else None
        for obj in self.chunks.iterator(return_properties=fields):
            record = _record(obj.properties, SEARCH_FIELDS)
            if wanted is None or (record.get("label") or "") in wanted:
                yield record

    @writing
    def set_term_stats(self, term_stats: str) -> None:
        """Replace the stored term statistics only (an ingest marks them as being updated)."""
        manifest = self._use(self.manifest_name)
        properties = {"term_stats": term_stats}
        if manifest.data.exists(TERM_STATS_UUID):
            manifest.data.replace(uuid=TERM_STATS_UUID, properties=properties)
        else:
            manifest.data.insert(properties=properties, uuid=TERM_STATS_UUID)

    @on_a_node
    def term_stats_text(self) -> str | None:
        """The stored term statistics (`fieldguide.bm25.TermStats.to_text`), or None."""
        if not self.client.collections.exists(self.manifest_name):
            return None
        obj = self._use(self.manifest_name).query.fetch_object_by_id(TERM_STATS_UUID)
        return (obj.properties.get("term_stats") or None) if obj is not None else None

    def check_manifest(self, embedding_model_id: str, embedding_backend: str | None = None) -> dict | None:
        """The manifest, or None for an index never built; ModelMismatch for another model or
        (when given) an embedding backend whose vectors are not interchangeable with the index's."""
        manifest = self.manifest()
        if manifest and manifest["embedding_model"] != embedding_model_id:
            raise ModelMismatch(mismatch_message(self.name, manifest["embedding_model"], embedding_model_id))
        if manifest and embedding_backend is not None and not _interchangeable(manifest["embedding_backend"],
                                                                               embedding_backend):
            raise ModelMismatch(backend_mismatch_message(self.name, manifest["embedding_backend"], embedding_backend))
        return manifest

    # --- per-file hashes (incremental ingest) ---------------------------------------------
    @writing
    def file_records(self) -> dict[str, dict]:
        """source -> {"sha256", "chunk_count"} for every ingested file of this store's doc set."""
        if not self.client.collections.exists(self.files_name):
            return {}
        files = self._use(self.files_name)
        wanted = ["source", "sha256", "chunk_count"]
        if any(prop.name == "label" for prop in files.config.get().properties):
            wanted.append("label")
        records = {}
        for obj in files.iterator(return_properties=wanted):
            props = obj.properties
            if (props.get("label") or None) != self.label:
                continue
            records[props["source"]] = {"sha256": props["sha256"], "chunk_count": int(props["chunk_count"] or 0)}
        return records

    def index_files(self) -> dict[str, dict]:
        """Every doc set's file records: the unnamed set's keyed by source (as `file_records`),
        a labelled set's by "@LABEL/source" (what the index version digests: `fieldguide.freshness`)."""
        records = dict(self.for_label(None).file_records()) if self.label else dict(self.file_records())
        for label in self.known_labels():
            for source, record in self.for_label(label).file_records().items():
                records[f"@{label}/{source}"] = record
        return records

    @writing
    def set_files(self, records: Sequence[tuple[str, str, int]]) -> None:
        """Record (source, sha256, chunk_count) for files whose chunks are now stored."""
        if not records:
            return
        from weaviate.classes.data import DataObject

        label = {"label": self.label} if self.label else {}
        objects = [DataObject(properties={"source": s, "sha256": h, "chunk_count": int(n), **label},
                              uuid=file_uuid(s, self.label))
                   for s, h, n in records]
        _insert_many(self._use(self.files_name), objects, "file records")

    @writing
    def delete_files(self, sources: Sequence[str]) -> None:
        if not sources:
            return
        from weaviate.classes.query import Filter

        self._use(self.files_name).data.delete_many(
            where=Filter.by_id().contains_any([file_uuid(s, self.label) for s in sources]))

    # --- chunks -------------------------------------------------------------------------
    @writing
    def insert_chunks(self, records: Sequence[dict], vectors) -> None:
        """Upsert chunk records (each with "chunk_id") with their vectors; UUID = uuid5(chunk_id)."""
        from weaviate.classes.data import DataObject

        from ingest.chunk import chunk_uuid

        label = {"label": self.label} if self.label else {}
        objects = [DataObject(properties={**{name: record.get(name, "") for name in CHUNK_FIELDS}, **label,
                                          "reading": _reading(record), "page_title": record.get("page_title") or ""},
                              uuid=chunk_uuid(record["chunk_id"]), vector=_as_list(vector))
                   for record, vector in zip(records, vectors, strict=True)]
        if objects:
            _insert_many(self.chunks, objects, "chunks")

    @writing
    def delete_source(self, source: str, keep_uuids: Sequence[str] = ()) -> int:
        """Delete the chunks of `source` of this store's doc set, except `keep_uuids` (just written).
        Returns how many."""
        from weaviate.classes.query import Filter

        where = [Filter.by_property("source").equal(source)]
        if keep_uuids:
            where.append(Filter.by_id().contains_none(list(keep_uuids)))
        in_set = self._set_filter()
        if in_set is not None:
            where.append(in_set)
        where = where[0] if len(where) == 1 else Filter.all_of(where)
        result = self.chunks.data.delete_many(where=where)
        return int(result.successful)

    @writing
    def drop_set(self) -> int:
        """Delete this store's doc set (its chunks and file records), leaving every other set as it
        is. Returns how many chunks went."""
        in_set = self._set_filter()
        if in_set is None:  # the only set there is: source by source
            deleted = sum(self.delete_source(source) for source in self.source_counts())
        else:
            deleted = int(self.chunks.data.delete_many(where=in_set).successful)
        self.delete_files(list(self.file_records()))
        return deleted

    @on_a_node
    def count(self) -> int:
        if not self.exists():
            return 0
        return int(self.chunks.aggregate.over_all(total_count=True, filters=self._read_filter()).total_count or 0)

    @on_a_node
    def count_kind(self, content_kind: str) -> int:
        """How many chunks have this `content_kind`."""
        if not self.exists():
            return 0
        result = self.chunks.aggregate.over_all(total_count=True, filters=self._read_filter(content_kind))
        return int(result.total_count or 0)

    @writing
    def source_documents(self, source: str, count: int) -> list[tuple[list[str], str]]:
        """(heading_path, reading) of the chunks of `source`, of which `count` are stored (an ingest
        reads them before replacing them, to update the term statistics)."""
        from weaviate.classes.query import Filter

        if count <= 0 or not self.exists():
            return []
        # one more than expected: a count that is off shows as a length that is off
        in_set = self._set_filter()
        where = Filter.by_property("source").equal(source)
        response = self.chunks.query.fetch_objects(
            filters=where if in_set is None else Filter.all_of([where, in_set]), limit=count + 1,
            return_properties=["heading_path", "text", *self._reading_property()])
        return [(list(obj.properties.get("heading_path") or []), _reading(obj.properties))
                for obj in response.objects]

    def iter_documents(self) -> Iterator[tuple[list[str], str]]:
        """(heading_path, reading) of every chunk, for the term statistics."""
        if not self.exists():
            return
        for obj in self.chunks.iterator(return_properties=["heading_path", "text", *self._reading_property()]):
            yield list(obj.properties.get("heading_path") or []), _reading(obj.properties)

    def _reading_property(self) -> list[str]:
        """["reading"] when the collection has it (one made before it existed lacks it until written)."""
        if getattr(self, "_has_reading", None) is None:
            self._has_reading = "reading" in {prop.name for prop in self.chunks.config.get().properties}
        return ["reading"] if self._has_reading else []

    @writing
    def sources(self) -> set[str]:
        return {obj.properties["source"] for obj in self.chunks.iterator(return_properties=["source"])}

    def texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """chunk_id -> text of those of `chunk_ids` that are stored (for answer freshness)."""
        from weaviate.classes.query import Filter

        found: dict[str, str] = {}
        if not chunk_ids or not self.exists():
            return found
        ids = list(dict.fromkeys(chunk_ids))
        for start in range(0, len(ids), 500):
            batch = ids[start:start + 500]
            response = self.chunks.query.fetch_objects(
                filters=Filter.by_property("chunk_id").contains_any(batch), limit=len(batch) * 2,
                return_properties=["chunk_id", "text"])
            for obj in response.objects:
                found[obj.properties["chunk_id"]] = obj.properties.get("text") or ""
        return found

    # --- search primitives ----------------------------------------------------------------
    @on_a_node
    def near_vector(self, vector, k: int, content_kind: str | None = None) -> list[dict]:
        """Top-k chunks by cosine similarity (= 1 - cosine distance), with every record field."""
        from weaviate.classes.query import MetadataQuery

        if not self.exists():
            return []
        fields = self._search_fields()
        response = self.chunks.query.near_vector(
            near_vector=_as_list(vector), limit=int(k), filters=self._read_filter(content_kind),
            return_metadata=MetadataQuery(distance=True), return_properties=fields)
        return [dict(_record(obj.properties, SEARCH_FIELDS), similarity=1.0 - float(obj.metadata.distance))
                for obj in response.objects]

    @on_a_node
    def hybrid(self, query: str, vector, k: int, alpha: float = 0.5, content_kind: str | None = None) -> list[dict]:
        """BM25 + vector fusion for exact names; "score" is the fused score, "similarity" the cosine."""
        import numpy as np
        from weaviate.classes.query import MetadataQuery

        if not self.exists():
            return []
        query_vector = np.asarray(_as_list(vector), dtype=np.float64)
        response = self.chunks.query.hybrid(
            query=query, vector=_as_list(vector), alpha=float(alpha), limit=int(k),
            query_properties=["heading_path^2", "reading", "embed_text"],
            filters=self._read_filter(content_kind), include_vector=True,
            return_metadata=MetadataQuery(score=True), return_properties=self._search_fields())
        results = []
        for obj in response.objects:
            stored = obj.vector.get("default") if isinstance(obj.vector, dict) else obj.vector
            if isinstance(stored, dict):  # a single unnamed vector may come keyed by any name
                stored = next(iter(stored.values()), None)
            stored = np.asarray(stored, dtype=np.float64)
            cosine = float(stored @ query_vector / (np.linalg.norm(stored) * np.linalg.norm(query_vector) or 1.0))
            results.append(dict(_record(obj.properties, SEARCH_FIELDS), score=float(obj.metadata.score or 0.0),
                                similarity=cosine))
        return results

    def searches(self, calls: Sequence) -> list:
        """The results of several searches (callables taking no argument, e.g. a `near_vector`
        with its arguments bound), sent at once: a question's search among all chunks and its
        search among screen chunks then cost about one round trip, not two. Each call fails over
        on its own (`on_a_node`); the first error is raised after every call has ended."""
        if len(calls) <= 1:
            return [call() for call in calls]
        pending = [_search_threads().submit(call) for call in calls[1:]]
        try:
            first = calls[0]()
        finally:
            concurrent.futures.wait(pending)
        return [first, *(future.result() for future in pending)]

    def group_parts(self, group_id: str) -> list[dict]:
        """Every part of a split section, ordered by part_index."""
        return self.reassembly_parts([group_id], [])[0][group_id]

    def section_intros(self, sections: Sequence[tuple[str, Sequence[str], int | None]]) -> list[dict | None]:
        """For each (source, heading_path, before_line): that section's first part, its own body.

        A section's group id derives from its source, heading path and occurrence
        (`ingest.chunk.make_group_id`), so the first few occurrences are asked for by id and
        the one nearest above `before_line` is taken (a parent starts above its child). None
        where the section has no body of its own (a heading followed directly by a child
        heading, which then opens the child's chunk).
        """
        return self.reassembly_parts([], sections)[1]

    @on_a_node
    def reassembly_parts(self, group_ids: Sequence[str], sections: Sequence[tuple]
                         ) -> tuple[dict[str, list[dict]], list[dict | None]]:
        """Every part of each section in `group_ids` (ordered by part_index) and
        `section_intros(sections)`, in one round trip. A section is (source, heading_path,
        before_line) or, for a labelled doc set's, (source, heading_path, before_line, label)."""
        from weaviate.classes.query import Filter

        from ingest.chunk import make_group_id

        found: dict[str, list[dict]] = {gid: [] for gid in group_ids}
        candidates = [[make_group_id(section[0], list(section[1]), n, section[3] if len(section) > 3 else None)
                       for n in range(INTRO_OCCURRENCES)] for section in sections]
        intro_ids = list(dict.fromkeys(g for ids in candidates for g in ids))
        firsts: dict[str, dict] = {}
        wanted = list(dict.fromkeys([*found, *intro_ids]))
        if wanted and self.exists():
            response = self.chunks.query.fetch_objects(
                filters=Filter.by_property("group_id").contains_any(wanted), limit=10000,
                return_properties=self._search_fields())
            for record in (_record(obj.properties, SEARCH_FIELDS) for obj in response.objects):
                if record["group_id"] in found:
                    found[record["group_id"]].append(record)
                if record["part_index"] == 1:
                    firsts[record["group_id"]] = record
            for parts in found.values():
                parts.sort(key=lambda r: r["part_index"])
        intros = []
        for (_, _, before_line, *_), ids in zip(sections, candidates):
            matches = [firsts[g] for g in ids if g in firsts
                       and (before_line is None or firsts[g]["line_start"] <= before_line)]
            intros.append(max(matches, key=lambda r: r["line_start"], default=None))
        return found, intros

    @on_a_node
    def unsearchable_reason(self, dimension: int) -> str | None:
        """None when a vector search finds the stored chunks; else why it cannot.

        Objects can be stored while the vector index does not hold them (written without a
        vector, an index lost or damaged on disk): every question would then abstain while
        the server looks healthy. One nearest-neighbour query of any vector of the index's
        `dimension` (the manifest's) must return a chunk whenever there is one.
        """
        if dimension <= 0 or not self.exists():
            return None
        stored = self.count()
        if stored == 0:
            return None
        probe = [1.0] + [0.0] * (dimension - 1)
        if self.chunks.query.near_vector(near_vector=probe, limit=1, return_properties=[]).objects:
            return None
        return (f"collection {self.name} holds {stored} chunks but a vector search finds none (its vector "
                f"index is empty or damaged): run `fieldguide ingest DOCS_DIR --reindex`")

    def ready(self, embedding_model_id: str | None = None, embedding_backend: str | None = None) -> bool:
        """Weaviate answers and the collection exists (built with `embedding_model_id` and
        `embedding_backend`, when given)."""
        try:
            if self.nodes is not None and not self.nodes.reachable():
                return False
            if not (self.client.is_ready() and self.exists()):
                return False
            if embedding_model_id is None:
                return True
            manifest = self.manifest()
            return (bool(manifest) and manifest["embedding_model"] == embedding_model_id
                    and (embedding_backend is None or _interchangeable(manifest["embedding_backend"], embedding_backend)))
        except Exception:
            return False


def _interchangeable(built_with: str, configured: str) -> bool:
    from fieldguide.embedding import interchangeable

    return interchangeable(built_with, configured)


def _json_or_none(text: str | None):
    import json

    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _as_list(vector) -> list[float]:
    return vector.tolist() if hasattr(vector, "tolist") else list(vector)


def _kind_filter(content_kind: str | None):
    if not content_kind:
        return None
    from weaviate.classes.query import Filter

    return Filter.by_property("content_kind").equal(content_kind)


def _record(properties: dict, fields: tuple[str, ...] = CHUNK_FIELDS) -> dict:
    """A chunk record from stored properties; `label` only for a labelled doc set's chunk (the
    unnamed set's records stay as they always were)."""
    record = {name: properties.get(name) for name in fields}
    if properties.get("label"):
        record["label"] = properties["label"]
    for name in INT_FIELDS:
        record[name] = int(record[name]) if record[name] is not None else 0
    for name in ("heading_path", "images"):
        record[name] = list(record[name] or [])  # Weaviate omits empty arrays
    if "reading" in fields:  # a record written without one reads as its text
        record["reading"] = _reading(properties)
        record["page_title"] = properties.get("page_title") or ""
    return record


def _insert_many(collection, objects, what: str) -> None:
    """insert_many; objects the server rejects raise StoreUnavailable with its first message
    (the client raises its own error instead of returning one when every object failed)."""
    from weaviate.exceptions import WeaviateInsertManyAllFailedError

    try:
        result = collection.data.insert_many(objects)
    except WeaviateInsertManyAllFailedError as exc:
        errors = str(exc).split("Here is the set of all errors:", 1)[-1].strip().splitlines()
        first = errors[0] if errors else str(exc)
        raise StoreUnavailable(f"Weaviate rejected {len(objects)} {what}: {first[:300]}") from exc
    _raise_batch_errors(result, what)


def _raise_batch_errors(result, what: str) -> None:
    if result.has_errors:
        first = next(iter(result.errors.values()))
        raise StoreUnavailable(f"Weaviate rejected {len(result.errors)} {what}: {first.message}")


# --- connecting ---------------------------------------------------------------------------

def _client_for(node, settings):
    import weaviate
    from weaviate.classes.init import AdditionalConfig, Auth, Timeout

    config = AdditionalConfig(timeout=Timeout(init=10, query=60, insert=180))
    auth = Auth.api_key(settings.weaviate_api_key) if settings.weaviate_api_key else None
    return weaviate.connect_to_custom(
        http_host=node.host, http_port=node.http_port, http_secure=node.secure,
        grpc_host=node.host, grpc_port=node.grpc_port, grpc_secure=node.secure,
        auth_credentials=auth, additional_config=config)


def configured_nodes(settings) -> list:
    """The nodes of `FIELDGUIDE_WEAVIATE_URL`, or of the local server (started when needed)."""
    from fieldguide import weaviate_nodes, weaviate_server

    if settings.weaviate_url:
        return weaviate_nodes.nodes_from_urls(settings.weaviate_url, settings.weaviate_grpc_port,
                                              settings.weaviate_grpc_ports)
    return [weaviate_nodes.Node(weaviate_server.HOST, node["http_port"], node["grpc_port"])
            for node in weaviate_server.start(settings)["nodes"]]


def connect(settings):
    """A weaviate-client v4 client for the configured (or locally managed) server; its first node."""
    node = configured_nodes(settings)[0]
    try:
        return _client_for(node, settings)
    except Exception as exc:
        raise _unreachable(settings, node, exc) from exc


def connect_nodes(settings):
    """A NodeSet over every configured node (the local server is started when needed)."""
    from fieldguide.weaviate_nodes import NodeSet

    nodes = configured_nodes(settings)

    def make_client(node):
        try:
            return _client_for(node, settings)
        except Exception as exc:
            raise _unreachable(settings, node, exc) from exc

    node_set = NodeSet(nodes, make_client, timeout=settings.weaviate_timeout_seconds)
    errors = []
    for _ in nodes:  # connect now, to a node that answers: a bad address is reported at once
        try:
            node_set.client
            return node_set
        except StoreUnavailable as exc:
            errors.append(exc)
            node_set._mark_down(node_set.node, exc)
            node_set._current = (node_set._current + 1) % len(nodes)
    node_set.close()
    raise errors[0]


def _unreachable(settings, node, exc: Exception) -> StoreUnavailable:
    if settings.weaviate_url:
        return StoreUnavailable(
            f"Cannot reach Weaviate at {node.label}: {_short(exc)}. "
            "Start it (e.g. `docker compose up -d weaviate`), fix FIELDGUIDE_WEAVIATE_URL / "
            "FIELDGUIDE_WEAVIATE_GRPC_PORT, or unset FIELDGUIDE_WEAVIATE_URL to let fieldguide run "
            "a local server.")
    return StoreUnavailable(
        f"The local Weaviate server did not answer ({_short(exc)}). Try `fieldguide weaviate stop` "
        f"then `fieldguide weaviate start`, or set FIELDGUIDE_WEAVIATE_URL.")


def _short(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("..." if len(text) > 300 else "")


@contextlib.contextmanager
def open_store(settings=None, collection: str | None = None) -> Iterator[ChunkStore]:
    """Yield a ChunkStore over the configured nodes; their clients are closed on exit."""
    if settings is None:
        from fieldguide.settings import get_settings

        settings = get_settings()
    nodes = connect_nodes(settings)
    try:
        yield ChunkStore(None, collection or settings.collection, nodes=nodes,
                         replication_factor=settings.replication_factor,
                         consistency_level=settings.consistency_level if settings.replication_factor > 1 else None)
    finally:
        nodes.close()


def _reading(properties: dict) -> str:
    """A chunk's reading, or its text when it has none (written before readings were, or a
    record made without the dialect pass)."""
    return properties.get("reading") or properties.get("text") or ""
