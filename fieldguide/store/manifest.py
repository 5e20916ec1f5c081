"""The manifest collection: how the index was built, its docs folder, calibration, embedding
prompts and term statistics, and each doc set's (label's) own object."""
from __future__ import annotations

import uuid as uuidlib

from fieldguide.errors import ModelMismatch
from fieldguide.store.failover import on_a_node, writing
from fieldguide.store.records import (
    LEGACY_EMBEDDING_BACKEND, MANIFEST_UUID, TERM_STATS_UUID, _interchangeable, _json_or_none,
    backend_mismatch_message, label_uuid, mismatch_message,
)


class ManifestMixin:
    """ChunkStore's manifest collection: the index's build, docs folder, calibration and term statistics."""

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
