"""The index as a LangChain vector store and retriever (langchain-weaviate), against a real Weaviate."""
from __future__ import annotations

import pytest

from fieldguide.errors import FieldguideError, ModelMismatch
from tests.conftest import ingested_collection

pytestmark = [pytest.mark.weaviate, pytest.mark.models]


@pytest.fixture(scope="module")
def ingested(weaviate_service, tmp_path_factory, embeddings):
    with ingested_collection(weaviate_service, tmp_path_factory.mktemp("fieldguide-data"), embeddings,
                             prefix="LangChain") as settings:
        yield settings


def test_a_retriever_over_the_index_gives_documents_with_the_chunk_metadata(ingested, embeddings):
    from langchain_core.vectorstores import VectorStore

    from fieldguide.langchain_store import open_vector_store

    with open_vector_store(ingested, embeddings=embeddings) as store:
        assert isinstance(store, VectorStore)
        docs = store.as_retriever(search_kwargs={"k": 3}).invoke("Which fields are on the booking form?")
        assert len(docs) == 3
        top = docs[0]
        assert top.metadata["source"] == "screens/booking-form.md"
        assert top.metadata["heading_path"][0] == "Booking form"
        assert top.metadata["line_start"] <= top.metadata["line_end"]
        assert {"chunk_id", "group_id", "content_kind", "images"} <= set(top.metadata)
        assert top.page_content.startswith("# Booking form")  # the text as written
        scored = store.similarity_search_with_score("booking form fields", k=2, alpha=1.0)
        assert [doc.metadata["source"] for doc, _ in scored][0] == "screens/booking-form.md"
        assert all(0.0 <= score <= 1.0 for _, score in scored)  # fused, normalised: not a cosine


def test_the_store_is_read_only(ingested, embeddings):
    from fieldguide.langchain_store import open_vector_store

    with open_vector_store(ingested, embeddings=embeddings) as store:
        with pytest.raises(NotImplementedError, match="fieldguide ingest"):
            store.add_texts(["a chunk without fieldguide's metadata"])


def test_an_empty_collection_or_another_model_is_refused(ingested, embeddings):
    from fieldguide.langchain_store import open_vector_store

    empty = ingested.model_copy(update={"collection": ingested.collection + "Empty"})
    with pytest.raises(FieldguideError, match="fieldguide ingest"):
        with open_vector_store(empty, embeddings=embeddings):
            pass
    other_model = ingested.model_copy(update={"embedding_model": "sentence-transformers/some-other-model"})
    with pytest.raises(ModelMismatch, match="--reindex"):
        with open_vector_store(other_model, embeddings=embeddings):
            pass
