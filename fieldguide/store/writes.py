"""Writing an ingest's results: chunk objects and the per-file records incremental ingest
compares against, and reading back what an ingest replaces."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

from fieldguide.store.failover import writing
from fieldguide.store.records import CHUNK_FIELDS, _as_list, _insert_many, _reading, file_uuid


class WritesMixin:
    """ChunkStore's writes: chunks and file records of its doc set."""

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
