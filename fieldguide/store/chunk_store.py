"""`ChunkStore`: one collection of chunks and its companions, assembled from the mixins of the
schema, the manifest, the writes and the searches; here its scoping (doc sets) and filters."""
from __future__ import annotations

import contextlib
from collections.abc import Sequence

from fieldguide.store.failover import on_a_node
from fieldguide.store.manifest import ManifestMixin
from fieldguide.store.records import (
    LABEL_PROPERTY_RECHECK_SECONDS, SEARCH_FIELDS, _interchangeable, _kind_filter, collection_name,
)
from fieldguide.store.schema import SchemaMixin
from fieldguide.store.search import SearchMixin
from fieldguide.store.writes import WritesMixin


class ChunkStore(SchemaMixin, ManifestMixin, WritesMixin, SearchMixin):
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
        # property name -> (when looked, whether the chunks collection has it): see `_has_property`
        self._properties_seen: dict[str, tuple[float, bool]] = {}

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

    @property
    def chunks(self):
        return self._use(self.name)

    @on_a_node
    def exists(self) -> bool:
        if not self._seen_collection:
            self._seen_collection = self.client.collections.exists(self.name)
        return self._seen_collection

    def _has_label_property(self) -> bool:
        """Whether the chunks carry labels at all."""
        return self._has_property("label")

    def _has_property(self, name: str) -> bool:
        """Whether the chunks collection has property `name`: an index from before labels (or
        before parents were named, `parent_group_id`) has no such property, and asking for it in
        a search would fail. An ingest by another process may add it: an absence is looked at
        again after a while."""
        import time

        seen = self._properties_seen.get(name)
        now = time.monotonic()
        if seen is not None and (seen[1] or now - seen[0] < LABEL_PROPERTY_RECHECK_SECONDS):
            return seen[1]
        present = self.exists() and any(prop.name == name for prop in self.chunks.config.get().properties)
        self._properties_seen[name] = (now, present)
        return present

    def _search_fields(self) -> list[str]:
        """What a read asks for: SEARCH_FIELDS the collection has, and `label` when it has one. A
        record read without `parent_group_id` gets "" (no parent intro) until the next ingest
        writes it again."""
        fields = [name for name in SEARCH_FIELDS if name != "parent_group_id" or self._has_property(name)]
        return [*fields, "label"] if self._has_label_property() else fields

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
