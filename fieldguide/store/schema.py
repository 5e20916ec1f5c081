"""Creating the three collections (chunks, manifest, files), adding what an older index lacks,
and dropping them."""
from __future__ import annotations

from fieldguide.store.failover import writing
from fieldguide.store.records import ADDED_CHUNK_FIELDS, PROFILE_PROPERTIES


class SchemaMixin:
    """ChunkStore's collections: made with an explicit schema, extended, dropped."""

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

        # made the same whether the collection is new or an older one gets them added
        added_chunk = {"reading": text("reading", searchable=True, filterable=False),
                       "page_title": text("page_title", searchable=True, filterable=False),
                       "parent_group_id": text("parent_group_id", filterable=False)}
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
                    *(added_chunk[name] for name in ADDED_CHUNK_FIELDS),
                ],
            )
        else:
            self._add_missing(self.name, [text("label"), *(added_chunk[name] for name in ADDED_CHUNK_FIELDS)])
        self._properties_seen = {name: (0.0, True) for name in ("label", *ADDED_CHUNK_FIELDS)}
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

    @writing
    def drop(self) -> None:
        self._seen_collection = False
        self._properties_seen = {}
        for name in (self.name, self.manifest_name, self.files_name):
            if self.client.collections.exists(name):
                self.client.collections.delete(name)
