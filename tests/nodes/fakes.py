"""Deterministic stand-ins for the store, the embedding model and the chat model."""
from __future__ import annotations

import hashlib
import math
import re

from fieldguide.errors import ModelMismatch

DIM = 64


class FakeEmbeddings:
    """Hashed bag of words, L2-normalised: shared words give a real, repeatable cosine."""

    def __init__(self):
        self.calls = 0

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        vector = [0.0] * DIM
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]


def record(chunk_id, text, *, source="guide.md", heading_path=("Guide",), group_id=None, part_index=1,
           part_count=1, content_kind="prose", chunk_type="section", images=(), token_count=None, parent_group_id=""):
    return {
        "chunk_id": chunk_id, "group_id": group_id or chunk_id, "part_index": part_index,
        "part_count": part_count, "chunk_type": chunk_type, "content_kind": content_kind,
        "source": source, "line_start": 1, "line_end": 2, "heading_path": list(heading_path),
        "text": text, "embed_text": " > ".join(heading_path) + "\n" + text,
        "token_count": token_count if token_count is not None else len(text.split()),
        "images": list(images), "parent_group_id": parent_group_id,
    }


class FakeStore:
    """The ChunkStore methods the graph uses, over an in-memory list of records."""

    def __init__(self, records: list[dict], model_id: str = "fake-model"):
        self.records = records
        self.model_id = model_id
        self.embeddings = FakeEmbeddings()
        self.vectors = {r["chunk_id"]: self.embeddings.embed_query(r["embed_text"]) for r in records}
        self.calls: list[tuple] = []

    def manifest(self):
        return {"embedding_model": self.model_id, "dimension": DIM, "chunker_version": "1",
                "embedding_backend": "fake"}

    def check_manifest(self, embedding_model_id: str, embedding_backend: str | None = None):
        if embedding_model_id != self.model_id:
            raise ModelMismatch(f"built with {self.model_id}; run fieldguide ingest DOCS --reindex")
        return self.manifest()

    def near_vector(self, vector, k, content_kind=None):
        self.calls.append(("near_vector", k, content_kind))
        return self._nearest(vector, k, content_kind)

    def hybrid(self, query, vector, k, alpha=0.5, content_kind=None):
        """Ranked as `near_vector` ranks; the call records the words the BM25 part was given."""
        self.calls.append(("hybrid", query, k, alpha, content_kind))
        return self._nearest(vector, k, content_kind)

    def _nearest(self, vector, k, content_kind):
        scored = []
        for r in self.records:
            if content_kind and r["content_kind"] != content_kind:
                continue
            similarity = sum(a * b for a, b in zip(vector, self.vectors[r["chunk_id"]]))
            scored.append(dict(r, similarity=round(similarity, 6)))
        scored.sort(key=lambda r: (-r["similarity"], r["chunk_id"]))
        return scored[:k]

    def searches(self, calls):
        return [call() for call in calls]  # one after another: the calls list keeps their order

    def count(self):
        return len(self.records)

    def count_kind(self, content_kind):
        return sum(1 for r in self.records if r["content_kind"] == content_kind)

    def term_stats_text(self):
        return None  # like an index built before term statistics: the candidates stand in

    def reassembly_parts(self, group_ids, parent_group_ids=()):
        self.calls.append(("reassembly_parts", list(group_ids), list(parent_group_ids)))
        parts = {gid: sorted((dict(r) for r in self.records if r["group_id"] == gid), key=lambda r: r["part_index"])
                 for gid in group_ids}
        firsts = {r["group_id"]: r for r in self.records if r["part_index"] == 1}
        return parts, [dict(firsts[gid]) if gid in firsts else None for gid in parent_group_ids]

    def page_records(self, source, under=()):
        self.calls.append(("page_records", source))
        return sorted((dict(r) for r in self.records if r["source"] == source
                       and list(r["heading_path"])[:len(under)] == list(under)),
                      key=lambda r: (int(r.get("line_start") or 0), int(r.get("part_index") or 1)))

    def ready(self):
        return True


def split_section(group_id, texts, **kwargs):
    """Records for one section split into len(texts) parts."""
    n = len(texts)
    return [record(f"{group_id}-p{i}", t, group_id=group_id, part_index=i, part_count=n, **kwargs)
            for i, t in enumerate(texts, start=1)]


def make_resources(records, *, chat_model=None, reranker=None, model_id=None, **settings):
    """Resources over fakes; the fake index claims the configured embedding model unless told."""
    from fieldguide.embedding import embedding_model_id
    from fieldguide.reranker import LexicalFallbackScorer
    from fieldguide.settings import Settings
    from graph.resources import Resources

    # Pin the knobs the tests rely on, so re-tuning the defaults does not change them.
    pinned = {"search_k": 12, "screen_k": 6, "min_similarity": 0.25, "rerank_min": 0.0, "abstain_margin": 0.0,
              "rank_window": None, "max_chunks": 4, "context_token_budget": 1200, "hybrid_alpha": None}
    settings = Settings(**{**pinned, **settings})
    model_id = model_id or embedding_model_id(settings)
    resources = Resources(settings, store=FakeStore(records, model_id=model_id),
                          embeddings=FakeEmbeddings(), reranker=reranker or LexicalFallbackScorer(),
                          chat_model=chat_model)
    return resources


def config_for(resources, **options):
    return {"configurable": {"resources": resources, **options}}
