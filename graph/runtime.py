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

from fieldguide.errors import InvalidOption
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
    verify: str  # "off" | "flag" | "drop": what happens to a generated sentence the context does not support
    min_support: float
    evidence_words: int
    condense: str  # "auto" | "model" | "rules" | "off"

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
            "verify": settings.verify or default_verify(settings.chat_provider),
            "min_support": settings.min_support if settings.min_support is not None
            else default_min_support(settings.chat_provider),
            "evidence_words": settings.evidence_words,
            "condense": settings.condense,
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
        for name, allowed in CHOICES.items():
            values[name] = str(values[name]).strip().lower()
            if values[name] not in allowed:
                raise InvalidOption(f"{name} must be one of {', '.join(allowed)}, not {values[name]!r}")
        return cls(**values)


VERIFY_MODES = ("off", "flag", "drop")
CHOICES = {"verify": VERIFY_MODES, "condense": ("auto", "model", "rules", "off")}


def _endpoint(chat_provider: str | None) -> bool:
    return (chat_provider or "local").lower() == "openai"


def default_verify(chat_provider: str | None) -> str:
    """The sentence check's default per generator: a small local model's unsupported sentences are
    dropped; a hosted model's are kept and marked (docs/BENCHMARKS.md, "Answers")."""
    return "flag" if _endpoint(chat_provider) else "drop"


def default_min_support(chat_provider: str | None) -> float:
    """Support a sentence needs, per generator: strict for the small local model, whose sentences
    reuse the docs' words while getting them wrong; looser for an endpoint's model, which paraphrases."""
    return 0.6 if _endpoint(chat_provider) else 0.8


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
        self._text_vectors = None
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
        """Refuse an index built with another embedding model (once per process)."""
        if self._manifest_checked:
            return
        from fieldguide.embedding import embedding_model_id

        self.store.check_manifest(embedding_model_id(self.settings))
        self._manifest_checked = True

    def skip_manifest_check(self) -> None:
        self._manifest_checked = True

    @property
    def text_vectors(self) -> "TextVectors":
        """Embeddings of context sentences, cached: the evidence step and the sentence check share them."""
        with self._lock:
            if self._text_vectors is None:
                self._text_vectors = TextVectors(self.embeddings)
            return self._text_vectors

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


class TextVectors:
    """Embeddings of short texts (sentences, list items, table rows), the most recent kept.

    Popular sections come back question after question; their sentences are embedded once.
    Vectors are kept as float32 arrays: `max_texts` of them take about 1.5 kB each at 384 dimensions.
    """

    def __init__(self, embeddings, max_texts: int = 8192):
        from collections import OrderedDict

        self.embeddings = embeddings
        self.max_texts = max_texts
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> list:
        import numpy as np

        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            fresh = self.embeddings.embed_documents(missing)
            with self._lock:
                for text, vector in zip(missing, fresh):
                    self._vectors[text] = np.asarray(vector, dtype=np.float32)
        with self._lock:
            found = []
            for text in texts:
                vector = self._vectors.get(text)
                if vector is None:  # evicted by another thread meanwhile
                    vector = np.asarray(self.embeddings.embed_documents([text])[0], dtype=np.float32)
                self._vectors[text] = vector
                self._vectors.move_to_end(text)
                found.append(vector)
            while len(self._vectors) > self.max_texts:
                self._vectors.popitem(last=False)
            return found

    def embed_one(self, text: str):
        import numpy as np

        return np.asarray(self.embeddings.embed_query(text), dtype=np.float32)


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


def question_of(state: dict) -> str:
    """The question retrieval and the answer steps work on: the standalone one when a follow-up
    was condensed (see nodes/condense.py), else the question as asked."""
    return state.get("standalone_question") or state["question"]


def with_timing(state: dict, node: str, ms: float) -> dict[str, float]:
    """This turn's timings plus one node's (a fresh dict: the condense node starts the turn)."""
    timings = dict(state.get("timings_ms") or {})
    timings[node] = ms
    return timings


def with_stage(state: dict, stage: str, candidates: list[dict]) -> dict[str, list[str]]:
    stages = dict(state.get("stages") or {})
    stages[stage] = [c["chunk_id"] for c in candidates]
    return stages
