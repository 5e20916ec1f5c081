"""fieldguide's index as a LangChain vector store and retriever (langchain-weaviate), for chains of your own.

    from fieldguide.langchain_store import open_vector_store

    with open_vector_store() as store:                       # settings from FIELDGUIDE_* / .env
        retriever = store.as_retriever(search_kwargs={"k": 4})
        for doc in retriever.invoke("How do I split a transaction?"):
            print(doc.metadata["source"], doc.metadata["heading_path"], doc.page_content[:80])

It is the collection `fieldguide ingest` built, opened the way fieldguide opens it (the local
Weaviate server or FIELDGUIDE_WEAVIATE_URL), queried with the embedding model the index was
built with (another one is refused, naming `--reindex`). Each `Document` holds a chunk's text
as written; its metadata holds the chunk's other fields (the chunk record, docs/architecture.md): `chunk_id`,
`group_id`, `part_index`, `part_count`, `source`, `line_start`, `line_end`, `heading_path`,
`chunk_type`, `content_kind`, `images`, `embed_text`, `token_count`.

Scores: langchain-weaviate always runs Weaviate's hybrid query, so the score of
`similarity_search_with_score` is the fused, normalised BM25 + vector score, not a cosine
similarity (`alpha=1.0` ranks by the vector alone, still on that scale). fieldguide's own
pipeline needs the real cosine for its threshold, so its search node asks Weaviate for
`near_vector` distances directly and does not go through this class.

The store is read-only: `add_texts` would write chunks without the ids and metadata that
incremental ingest relies on, so it refuses; `fieldguide ingest DOCS_DIR` writes the index.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from fieldguide.errors import FieldguideError


def _read_only_store_class():
    from langchain_weaviate import WeaviateVectorStore

    class FieldguideVectorStore(WeaviateVectorStore):
        """langchain-weaviate's vector store over a fieldguide collection, read-only."""

        def add_texts(self, *args: Any, **kwargs: Any):
            raise NotImplementedError("fieldguide's index is written by `fieldguide ingest DOCS_DIR`, not add_texts")

        async def aadd_texts(self, *args: Any, **kwargs: Any):
            raise NotImplementedError("fieldguide's index is written by `fieldguide ingest DOCS_DIR`, not add_texts")

        def delete(self, *args: Any, **kwargs: Any):
            raise NotImplementedError("fieldguide's ingest removes the chunks of deleted files itself")

    return FieldguideVectorStore


@contextlib.contextmanager
def open_vector_store(settings=None, *, embeddings=None) -> Iterator[Any]:
    """A LangChain `VectorStore` over the configured collection; the connection closes afterwards."""
    from fieldguide.embedding import embedding_backend_id, embedding_model_id, load_embeddings
    from fieldguide.settings import get_settings
    from fieldguide.store import ChunkStore, connect

    settings = settings or get_settings()
    client = connect(settings)
    try:
        chunks = ChunkStore(client, settings.collection)
        if not chunks.exists() or chunks.manifest() is None:
            raise FieldguideError(f"collection {chunks.name} holds no index: run `fieldguide ingest DOCS_DIR` first")
        chunks.check_manifest(embedding_model_id(settings), embedding_backend_id(settings))
        store_class = _read_only_store_class()
        yield store_class(client=client, index_name=chunks.name, text_key="text",
                          embedding=embeddings or load_embeddings(settings))
    finally:
        client.close()
