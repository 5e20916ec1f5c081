"""The heavy things nodes share: store, embedding model, reranker, chat model, caches.

They are loaded once, lazily, on first use. Callers that manage them (the CLI, the service,
tests with fakes) pass a `Resources` as `configurable["resources"]`; otherwise one
process-wide instance is built lazily from settings (this is what LangGraph Studio uses) and
closed when the process exits. `Resources.close()` (or leaving `with Resources(...)`) closes
what it opened itself, latest first; what a caller injected stays the caller's to close.
"""
from __future__ import annotations

import atexit
import contextlib
import threading
from typing import Any

from fieldguide.settings import Settings, get_settings

WARM_UP_CANDIDATE = {"chunk_id": "warm-up", "heading_path": ["Warm up"], "text": "warm up",
                     "similarity": 0.0, "content_kind": "prose"}


class Resources:
    """Lazily loaded, shared models and store. Anything may be injected (tests, service)."""

    def __init__(self, settings: Settings | None = None, *, store=None, embeddings=None,
                 reranker=None, chat_model=None):
        self.settings = settings or get_settings()
        self._store = store
        self._opened = contextlib.ExitStack()  # what this instance opened itself, closed latest first
        self._embeddings = embeddings
        self._reranker = reranker
        self._chat_model = chat_model
        self._manifest_checked = False
        self._text_vectors = None
        self._term_stats = None
        self._calibration = None
        self._label_calibrations: dict[str, Any] = {}
        self._intent_prototypes = None
        self._token_counter = None
        self._options: dict[tuple, Any] = {}  # graph.options.options_for's cache of resolved options
        self._lock = threading.RLock()

    @property
    def store(self):
        with self._lock:
            if self._store is None:
                from fieldguide.store import open_store

                self._opened.callback(setattr, self, "_store", None)  # once closed, the next use opens it again
                self._store = self._opened.enter_context(open_store(self.settings))
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
    def term_stats(self):
        """The index's term statistics (`fieldguide.bm25.TermStats`), read once; None for an index
        built before they existed (the fallback scorer then uses the candidates' own)."""
        with self._lock:
            if self._term_stats is None:
                from fieldguide.bm25 import TermStats

                reader = getattr(self.store, "term_stats_text", None)
                self._term_stats = (TermStats.from_text(reader()) if reader else None) or False
            return self._term_stats or None

    @property
    def calibration(self):
        """The index's calibration (`fieldguide.calibration`), read from its manifest once per process;
        an index without one for the active scorer is calibrated on first use (not stored)."""
        with self._lock:
            if self._calibration is None:
                from fieldguide.calibration import load_calibration

                self._calibration = load_calibration(self.store, self.embeddings, self.reranker, self.term_stats)
            return self._calibration

    def calibration_for(self, labels) -> Any:
        """The calibration a question limited to `labels` is judged by: that label's own when it
        names exactly one doc set that has one (measured at its ingest), else the index's."""
        if not labels or len(labels) != 1:
            return self.calibration
        label = labels[0]
        with self._lock:
            cache = self._label_calibrations
            if label not in cache:
                from fieldguide.calibration import Calibration, scorer_scale

                reader = getattr(self.store, "label_calibration", None)
                found = Calibration.from_dict(reader(label)) if reader else None
                usable = found is not None and found.scorer == scorer_scale(self.reranker)
                cache[label] = found if usable else None
            return cache[label] or self.calibration

    @property
    def token_counter(self):
        """The embedding model's tokenizer (`ingest.tokens.TokenCounter`), loaded once."""
        with self._lock:
            if self._token_counter is None:
                from ingest.tokens import get_counter

                self._token_counter = get_counter(self.settings.embedding_model)
            return self._token_counter

    @property
    def intent_prototypes(self):
        """The route examples' mean vectors, embedded once with the index's model (graph.intent_examples)."""
        with self._lock:
            if self._intent_prototypes is None:
                from graph.intent_examples import embed_prototypes

                self._intent_prototypes = embed_prototypes(self.embeddings)
            return self._intent_prototypes

    @property
    def chat_model(self):
        with self._lock:
            if self._chat_model is None:
                from fieldguide.chat import load_chat_model

                self._chat_model = load_chat_model(self.settings)
            return self._chat_model

    def start_chat_model(self) -> None:
        """Start the local model's process without waiting for it (a no-op for an endpoint)."""
        server = getattr(self.chat_model, "server", None)
        if server is not None:
            server.start()

    def warm_up(self, chat: bool = True) -> None:
        """Load the models and run the embedding model and the reranker once, so that no question
        pays for it (a configured cross-encoder takes seconds to load, and a model's first call
        carries one-off costs); embed the route examples and, with a store open, read the
        index's calibration. `chat=False` leaves the chat model unloaded (retrieval only)."""
        server = getattr(self.chat_model, "server", None) if chat else None
        if server is not None:  # the local model's process starts while the rest warms up
            self.start_chat_model()
        self.embeddings.embed_query("warm up")
        self.reranker.score("warm up", [WARM_UP_CANDIDATE])
        self.intent_prototypes
        self.token_counter
        if self._store is not None:  # an opened store: its calibration too (calibrating an old index runs probes)
            self.calibration
        if server is not None:
            server.ensure_ready()

    def model_status(self) -> dict | None:
        """The local model process's state ('starting', 'ready', 'crashed', 'stopped'), its restarts
        and how it last ended; None when the chat model is not a local one or not loaded yet."""
        server = getattr(self._chat_model, "server", None)
        if server is None:
            return None
        return {"state": server.state(), "restarts": server.restarts, "last_exit": server.last_exit}

    def close(self) -> None:
        """Close what this instance opened (the store's connection), latest first; it opens again
        when used again."""
        with self._lock:
            opened, self._opened = self._opened, contextlib.ExitStack()
            opened.close()

    def __enter__(self) -> "Resources":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
            atexit.register(_default_resources.close)
        return _default_resources
