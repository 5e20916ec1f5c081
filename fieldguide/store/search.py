"""Reading chunks back: vector and hybrid searches (several at once), counts, and the parts a
split section or a parent's intro is reassembled from."""
from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator, Sequence

from fieldguide.store.failover import on_a_node
from fieldguide.store.records import SEARCH_FIELDS, _as_list, _record

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


class SearchMixin:
    """ChunkStore's reads: searches, counts and the parts of a reassembled section."""

    def iter_chunks(self, labels: Sequence[str] | None = None) -> Iterator[dict]:
        """Every stored chunk record (with its `label`, when it has one); with `labels`, only the
        chunks of those doc sets ("" stands for the unnamed set)."""
        if not self.exists():
            return
        fields = self._search_fields()
        wanted = set(labels) if labels is not None else None
        for obj in self.chunks.iterator(return_properties=fields):
            record = _record(obj.properties, SEARCH_FIELDS)
            if wanted is None or (record.get("label") or "") in wanted:
                yield record

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

    @on_a_node
    def reassembly_parts(self, group_ids: Sequence[str], parent_group_ids: Sequence[str] = ()
                         ) -> tuple[dict[str, list[dict]], list[dict | None]]:
        """Every part of each section in `group_ids` (ordered by part_index), and for each of
        `parent_group_ids` (a subsection's `parent_group_id`, named at ingest) that section's
        first part, its own intro (None where it is not stored), in one round trip.

        A record from an index written before parents were named has an empty
        `parent_group_id` and gets no intro: the next ingest chunks every file again anyway
        (the chunker version changed with the field)."""
        from weaviate.classes.query import Filter

        found: dict[str, list[dict]] = {gid: [] for gid in group_ids}
        firsts: dict[str, dict] = {}
        wanted = list(dict.fromkeys(g for g in [*found, *parent_group_ids] if g))
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
        return found, [firsts.get(gid) if gid else None for gid in parent_group_ids]

    @on_a_node
    def page_records(self, source: str, under: Sequence[str] = ()) -> list[dict]:
        """The chunks of one page (`source`), within `labels`, in the page's order (line, then part):
        what a hit section's own subsections are taken from (`nodes.reassemble`). With `under` (a
        heading path) only chunks whose headings hold every word of it: that section's own, and the
        few whose other headings share its words (the caller keeps what sits under it), not a
        thousand-chunk page."""
        from weaviate.classes.query import Filter

        if not source or not self.exists():
            return []
        filters = [Filter.by_property("source").equal(source)]
        if any(title.strip() for title in under):
            filters.append(Filter.by_property("heading_path").contains_all([t for t in under if t.strip()]))
        if (labels := self._labels_filter()) is not None:
            filters.append(labels)
        response = self.chunks.query.fetch_objects(
            filters=filters[0] if len(filters) == 1 else Filter.all_of(filters), limit=10000,
            return_properties=self._search_fields())
        records = [_record(obj.properties, SEARCH_FIELDS) for obj in response.objects]
        return sorted(records, key=lambda r: (int(r.get("line_start") or 0), int(r.get("part_index") or 1)))

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
