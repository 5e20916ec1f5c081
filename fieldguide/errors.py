"""Errors that reach the user as one clear sentence (the CLI prints them without a traceback)."""

# What a message names when the torch stack (torch, sentence-transformers, langchain-huggingface) is
# missing: an optional extra, needed by none of the defaults.
TORCH_EXTRA = "pip install 'fieldguide[torch]'"


class FieldguideError(Exception):
    """Base class: the message says what went wrong and what to do."""


class StoreUnavailable(FieldguideError):
    """No Weaviate server can be reached or started."""


class ModelMismatch(FieldguideError):
    """The index was built with another embedding model (or chunker version)."""


class InvalidQuestion(FieldguideError):
    """Empty, oversized or malformed question."""


class ModelUnavailable(FieldguideError):
    """A model (embedding, reranker, chat) cannot be loaded or called."""


class StateUnavailable(FieldguideError):
    """The conversation state (Redis, Postgres) did not answer in time."""


class ModelCrashed(ModelUnavailable):
    """The local model's process ended while it was answering; the next question starts it again."""
