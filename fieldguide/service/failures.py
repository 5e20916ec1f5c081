"""What a reader is told when a turn fails, and what only the log is told.

A reader sees one plain sentence that says what happened and what to do; the exception's own
text (gRPC dumps, internal addresses, file paths) goes to the service's log. Failures of a
dependency (Weaviate, Redis or Postgres, the chat model) each have their sentence; a question
the service refused keeps its own message, which is written for the reader; anything else is
named by its type only.
"""
from __future__ import annotations

import logging

from fieldguide.errors import (
    FieldguideError,
    InvalidQuestion,
    ModelCrashed,
    ModelMismatch,
    ModelUnavailable,
    StateUnavailable,
    StoreUnavailable,
)

log = logging.getLogger("fieldguide.service")

STORE_DOWN = "The documentation index (Weaviate) is not reachable right now. Please try again in a moment."
MODEL_DOWN = "The answer model is not available right now. Please try again in a moment."
MODEL_CRASHED = "The answer model stopped while answering and is starting again. Please ask again in a moment."
STATE_DOWN = "The conversation store is not reachable right now. Please try again in a moment."
INDEX_MISMATCH = ("The documentation index was built with another embedding model and has to be rebuilt "
                  "before questions can be answered.")


def _kind(exc: BaseException) -> str | None:
    """'store', 'model' or 'state' for a dependency's failure (or one it was raised from); None otherwise."""
    seen = 0
    while exc is not None and seen < 8:
        kind = _own_kind(exc)
        if kind is not None:
            return kind
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _own_kind(exc: BaseException) -> str | None:
    if isinstance(exc, StoreUnavailable):
        return "store"
    if isinstance(exc, ModelUnavailable):
        return "model"
    if isinstance(exc, StateUnavailable):
        return "state"
    module = type(exc).__module__.split(".", 1)[0]
    if module in ("weaviate", "grpc"):
        return "store"
    if module in ("openai", "langchain_openai", "llama_cpp"):
        return "model"
    if module in ("redis", "psycopg", "psycopg_pool"):
        return "state"
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return "store"
    return None


def _caused_by(exc: BaseException, kind: type) -> bool:
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, kind):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def reader_message(exc: BaseException, conversation_id: str = "") -> str:
    """The sentence for the `error` event; the details are logged here."""
    kind = _kind(exc)
    if kind is not None:
        log.warning("conversation %s: %s failed: %s: %s", conversation_id, kind, type(exc).__name__,
                    " ".join(str(exc).split())[:2000])
        if kind == "state" and isinstance(exc, StateUnavailable):
            return str(exc)
        if kind == "model" and _caused_by(exc, ModelCrashed):
            return MODEL_CRASHED
        return {"store": STORE_DOWN, "model": MODEL_DOWN, "state": STATE_DOWN}[kind]
    if isinstance(exc, ModelMismatch):
        log.warning("conversation %s: %s", conversation_id, exc)
        return INDEX_MISMATCH
    if isinstance(exc, (InvalidQuestion, FieldguideError)):
        return str(exc)
    log.error("conversation %s failed", conversation_id, exc_info=exc)
    return f"Something went wrong while answering ({type(exc).__name__}). Please try again."
