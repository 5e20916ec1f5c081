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

The package, by job: `records` (fixed UUIDs, the chunk fields, record conversions), `failover`
(each call on a node that answers), `schema`, `manifest`, `writes` and `search` (the mixins
`ChunkStore` is assembled from, in `chunk_store`), `connect` (clients and `open_store`).
"""
from __future__ import annotations

from fieldguide.store.chunk_store import ChunkStore
from fieldguide.store.connect import configured_nodes, connect, connect_nodes, open_store
from fieldguide.store.failover import WRITE_DEADLINE_SECONDS, on_a_node, writing
from fieldguide.store.records import (
    ADDED_CHUNK_FIELDS, CHUNK_FIELDS, FILE_NAMESPACE, INT_FIELDS, LABEL_NAMESPACE,
    LABEL_PROPERTY_RECHECK_SECONDS, LEGACY_EMBEDDING_BACKEND, MANIFEST_UUID, PROFILE_PROPERTIES,
    SEARCH_FIELDS, TERM_STATS_UUID, TEXT_FIELDS_FILTERED, backend_mismatch_message, collection_name,
    file_uuid, label_uuid, mismatch_message,
)

__all__ = [
    "ADDED_CHUNK_FIELDS", "CHUNK_FIELDS", "FILE_NAMESPACE", "INT_FIELDS", "LABEL_NAMESPACE",
    "LABEL_PROPERTY_RECHECK_SECONDS", "LEGACY_EMBEDDING_BACKEND", "MANIFEST_UUID", "PROFILE_PROPERTIES",
    "SEARCH_FIELDS", "TERM_STATS_UUID", "TEXT_FIELDS_FILTERED", "WRITE_DEADLINE_SECONDS", "ChunkStore",
    "backend_mismatch_message", "collection_name", "configured_nodes", "connect", "connect_nodes",
    "file_uuid", "label_uuid", "mismatch_message", "on_a_node", "open_store", "writing",
]
