"""What nodes need besides the state: per-request options and shared resources.

Options come from the run's config (`config["configurable"]`), falling back to
`Settings`, so every threshold, k, cap and budget can be changed per request:

    graph.invoke({"question": "..."}, {"configurable": {"max_chunks": 2}})

Resources (store, embedding model, reranker, chat model) are heavy and loaded once.
Callers that manage them (the CLI, the service, tests with fakes) pass a `Resources`
as `configurable["resources"]`; otherwise one process-wide instance is built lazily
from settings (this is what LangGraph Studio uses).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, fields
from typing import Any

from fieldguide.settings import Settings, get_settings


@dataclass(frozen=True)
class QueryOptions:
    search_k: int
    screen_k: int  # extra screen-only candidates searched for screen/ambiguous questions
    min_similarity: float
    use_reranker: bool
    rerank_min: float
    max_chunks: int
    context_token_budget: int
    hybrid_alpha: float | None
    max_answer_tokens: int
    temperature: float
    use_reassembly: bool  # off only to measure what a stage buys (fieldguide eval --ablate)
    use_routing: bool
    parent_intro: bool  # put a subsection hit's parent intro before it, budget allowing
    dedupe: bool  # drop near-copies of a better-ranked chunk before the cap

    @classmethod
    def from_config(cls, config: dict | None, settings: Settings | None = None) -> "QueryOptions":
        settings = settings or resources_for(config).settings
        values: dict[str, Any] = {
            "search_k": settings.search_k,
            "screen_k": settings.screen_k,
            "min_similarity": settings.min_similarity,
            "use_reranker": True,
            "rerank_min": settings.rerank_min,
            "max_chunks": settings.max_chunks,
            "context_token_budget": settings.context_token_budget,
            "hybrid_alpha": settings.hybrid_alpha,
            "max_answer_tokens": settings.max_answer_tokens,
            "temperature": settings.temperature,
            "use_reassembly": True,
            "use_routing": True,
            "parent_intro": settings.parent_intro,
            "dedupe": settings.dedupe,
        }
        overrides = (config or {}).get("configurable") or {}
        aliases = {"k": "search_k", "reranker": "use_reranker", "reassembly": "use_reassembly",
                   "routing": "use_routing"}
        for key, value in overrides.items():
            name = aliases.get(key, key)
            if name in values and value is not None:
                values[name] = value
        types = {f.name: f.type for f in fields(cls)}
        for name, value in list(values.items()):
            if value is None:
                continue
            if types[name] == "int":
                values[name] = int(value)
            elif types[name] == "float" or types[name] == "float | None":
                values[name] = float(value)
            elif types[name] == "bool":
                values[name] = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
        return cls(**values)


WARM_UP_CANDIDATE = {"chunk_id": "warm-up", "heading_path": ["Warm up"], "text": "warm up",
                     "similarity": 0.0, "content_kind": "prose"}


class Resources:
    """Lazily loaded, shared models and store. Anything may be injected (tests, service)."""

    def __init__(self, settings: Settings | None = None, *, store=None, embeddings=None,
                 reranker=None, chat_model=None):
        self.settings = settings or get_settings()
        self._store = store
        self._store_context = None
        self._embeddings = embeddings
        self._reranker = reranker
        self._chat_model = chat_model
        self._manifest_checked = False
        self._lock = threading.RLock()

    @property
    def store(self):
        with self._lock:
            if self._store is None:
                from fieldguide.store import open_store

                self._store_context = open_store(self.settings)
                self._store = self._store_context.__enter__()
            return self._store

    @property
    def embeddings(self):
        with self._lock:
            if self._embeddings is None:
                from fieldguide.embedding import load_embeddings

                self._embeddings = load_embeddings(self.settings)
            return self._embeddings

    def check_manifest(self) -> None:
        """Refuse an index built with another embedding model or backend (once per process)."""
        if self._manifest_checked:
            return
        from fieldguide.embedding import embedding_backend_id, embedding_model_id

        self.store.check_manifest(embedding_model_id(self.settings), embedding_backend_id(self.settings))
        self._manifest_checked = True

    def skip_manifest_check(self) -> None:
        self._manifest_checked = True

    @property
    def reranker(self):
        with self._lock:
            if self._reranker is None:
                from fieldguide.reranker import load_reranker

                self._reranker = load_reranker(self.settings)
            return self._reranker

    @property
    def chat_model(self):
        with self._lock:
            if self._chat_model is None:
                from fieldguide.chat import load_chat_model

                self._chat_model = load_chat_model(self.settings)
            return self._chat_model

    def warm_up(self, chat: bool = True) -> None:
        """Load the models and run the embedding model and the reranker once, so that no question
        pays for it (a configured cross-encoder takes seconds to load, and a model's first call
        carries one-off costs). `chat=False` leaves the chat model unloaded (retrieval only)."""
        self.embeddings.embed_query("warm up")
        self.reranker.score("warm up", [WARM_UP_CANDIDATE])
        if chat:
            self.chat_model

    def close(self) -> None:
        with self._lock:
            if self._store_context is not None:
                self._store_context.__exit__(None, None, None)
                self._store_context = None
                self._store = None


_default_resources: Resources | None = None
_default_lock = threading.Lock()


def resources_for(config: dict | None) -> Resources:
    injected = ((config or {}).get("configurable") or {}).get("resources")
    if injected is not None:
        return injected
    global _default_resources
    with _default_lock:
        if _default_resources is None:
            _default_resources = Resources()
        return _default_resources


def options_for(config: dict | None) -> QueryOptions:
    return QueryOptions.from_config(config, resources_for(config).settings)


class Stopwatch:
    """Milliseconds spent in a block: `with Stopwatch() as sw: ...; sw.ms`."""

    def __enter__(self) -> "Stopwatch":
        self._start = time.perf_counter()
        self.ms = 0.0
        return self

    def __exit__(self, *exc) -> None:
        self.ms = round((time.perf_counter() - self._start) * 1000.0, 3)


def with_timing(state: dict, node: str, ms: float) -> dict[str, float]:
    """This turn's timings plus one node's (a fresh dict: the route node starts the turn)."""
    timings = dict(state.get("timings_ms") or {})
    timings[node] = ms
    return timings


def with_stage(state: dict, stage: str, candidates: list[dict]) -> dict[str, list[str]]:
    stages = dict(state.get("stages") or {})
    stages[stage] = [c["chunk_id"] for c in candidates]
    return stages
