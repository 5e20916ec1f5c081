"""What the store keeps and how: fixed UUIDs and namespaces, the chunk fields and their Weaviate
types, the messages of a mismatched index, and the conversions between chunk records and stored
objects."""
from __future__ import annotations

import uuid as uuidlib

from fieldguide.errors import StoreUnavailable

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
# How long a store that found no `label` (or `parent_group_id`) property on its collection (an
# index from before labels, or before parents were named) trusts that: an ingest by another
# process adds it.
LABEL_PROPERTY_RECHECK_SECONDS = 30.0

# chunk record fields (ingest.chunk.RECORD_FIELDS; docs/architecture.md) and how Weaviate stores them
TEXT_FIELDS_FILTERED = ("chunk_id", "group_id", "chunk_type", "content_kind", "source")
INT_FIELDS = ("part_index", "part_count", "line_start", "line_end", "token_count")
CHUNK_FIELDS = (
    "chunk_id", "group_id", "part_index", "part_count", "chunk_type", "content_kind", "source",
    "line_start", "line_end", "heading_path", "text", "embed_text", "token_count", "images",
    "reading", "page_title", "parent_group_id",
)
# Chunk properties added after the first release: a collection made before them gets them added
# (its chunks are written again anyway, since the chunker version changed with them).
ADDED_CHUNK_FIELDS = ("reading", "page_title", "parent_group_id")
# What a search returns of each chunk: `embed_text` (the breadcrumb and the text again, what was
# embedded) is not read after the search, and leaving it out halves what each query carries back.
SEARCH_FIELDS = tuple(name for name in CHUNK_FIELDS if name != "embed_text")


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
    if "parent_group_id" in fields:  # written before parents were named: none (see `reassembly_parts`)
        record["parent_group_id"] = properties.get("parent_group_id") or ""
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


def _reading(properties: dict) -> str:
    """A chunk's reading, or its text when it has none (written before readings were, or a
    record made without the dialect pass)."""
    return properties.get("reading") or properties.get("text") or ""
