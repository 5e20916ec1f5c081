"""The embedding model exported once to ONNX (int8 dynamic quantisation), cached in the data dir.

The ONNX backend runs the configured sentence-transformers model through OpenVINO or ONNX
Runtime. The export is done once per model and quantisation setting, here:

1. The model's own sentence-transformers files say how it is used (tokenizer, maximum sequence
   length, pooling, whether vectors are normalised, a default prompt). Models with other modules
   (a Dense projection, a router) are refused: the torch backend serves them.
2. The transformer's fp32 graph: for BERT-family models (the packaged default among them)
   written from the safetensors weights with onnx.helper, without torch
   (`fieldguide.bert_export`); for others, torch's own exporter (`torch.onnx.export`) on the
   model sentence-transformers loads, which needs the `torch` extra.
3. With quantisation `int8`, onnxruntime's dynamic quantiser (`quantize_dynamic`, the tool
   optimum's ORTQuantizer drives) turns the MatMul weights into int8, one scale per output
   channel. Per-tensor scales drifted much further from fp32 vectors (cosine mean 0.946 against
   0.993 on the development docs), and leaving the embedding table in fp32 costs no speed.
   optimum itself is not used: its ONNX package requires an older transformers than this
   project's.
4. The graph is stored as onnxruntime optimises it (fusions at the EXTENDED level, which do
   not depend on the processor): the same computation a session would set up at every load,
   done once, so that opening the model takes about half as long (the vectors are identical).
5. The result is checked before it is kept: the fp32 graph, run by `OnnxEncoder`, must give
   the reference's vectors (cosine >= FP32_MIN_COSINE on probe texts, padded batches
   included), and the quantised graph must stay close (>= INT8_MIN_COSINE). The reference is
   sentence-transformers itself when it is installed, else (BERT only) an independent numpy
   forward pass of the same weights, so a wrong graph is refused either way.

The cache lives in `<model_cache_dir>/onnx/<model>-<quantisation>-<digest>/` (the model cache
dir defaults to `<data_dir>/models`), the digest covering the model
id, the quantisation, this exporter's version and the model files' sizes and dates, so a
changed model is exported anew. Two processes exporting at the same moment end up with one
copy (a lock file, and the finished folder is renamed into place).
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from fieldguide.bert_export import EXPORTER as BERT_EXPORTER
from fieldguide.bert_export import POOLING_MODES, SUPPORTED_MODULES
from fieldguide.errors import TORCH_EXTRA, ModelUnavailable
from fieldguide.onnx_embeddings import ENCODER_CONFIG, MODEL_FILE, TOKENIZER_FILE

# Raise when the export itself changes (other graph, other quantiser options): old caches are
# then left alone and a new one is made.
EXPORT_VERSION = "3"  # 3: BERT-family models written without torch
FP32_MIN_COSINE = 0.9999
INT8_MIN_COSINE = 0.95
# Probe texts for the check: short and long, words the vocabulary lacks, surrounding blanks,
# accents, a table row; encoded together so that padding is exercised.
PROBE_TEXTS = (
    "How do I split a transaction?",
    "  Settings > Sync: turn on sync to use the budget on your phone.  ",
    "Überweisungen, Kategorien und Konten: è à ü — 予算",
    "| Field | Meaning |\n| --- | --- |\n| Payee | who was paid |",
    " ".join(["The schedule repeats every month on the same day, and each occurrence is posted "
              "automatically once its date arrives."] * 12),
)


def cache_root(cache_dir: Path) -> Path:
    return Path(cache_dir) / "onnx"


def _model_files_fingerprint(model_path: str) -> list:
    """(relative name, size, mtime) of a local model's files; [] for a hub name."""
    root = Path(model_path)
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            stat = path.stat()
            found.append([path.relative_to(root).as_posix(), stat.st_size, int(stat.st_mtime)])
    return found


def export_dir(cache_dir: Path, model_id: str, model_path: str, quantization: str) -> Path:
    """Where the export of this model with this quantisation (`int8` or `none`) lives (it may
    not exist yet)."""
    key = json.dumps([EXPORT_VERSION, model_id, quantization, _model_files_fingerprint(model_path)])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id.strip("/").split("/")[-1])[:60] or "model"
    return cache_root(cache_dir) / f"{name}-{quantization}-{digest}"


def ensure_export(cache_dir: Path, model_id: str, model_path: str, quantization: str, log=None,
                  reference: str = "auto") -> Path:
    """The export folder for this model, exporting it first when it is not there yet (`reference`:
    what the export is checked against, see `export_model`)."""
    target = export_dir(cache_dir, model_id, model_path, quantization)
    if (target / ENCODER_CONFIG).is_file():
        return target
    log = log or (lambda message: print(message, file=sys.stderr))
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent / ".lock"):
        if (target / ENCODER_CONFIG).is_file():  # another process finished it meanwhile
            return target
        log(f"exporting the embedding model {model_id} to ONNX ({quantization}), once; "
            f"it is kept in {target.parent}")
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as tmp:
            work = Path(tmp) / "out"
            work.mkdir()
            export_model(model_path, model_id, quantization, work, reference=reference)
            if target.exists():  # an unfinished folder left by a killed export
                shutil.rmtree(target)
            os.replace(work, target)
        log(f"exported in {time.perf_counter() - started:.1f}s")
    return target


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def export_model(model_path: str, model_id: str, quantization: str, out: Path, reference: str = "auto") -> dict:
    """Write model.onnx, tokenizer.json and encoder.json into `out`; returns the encoder config.

    BERT-family models are written without torch (`fieldguide.bert_export`); others go through
    torch's exporter, which needs the `torch` extra. `reference`: what the export is checked
    against, `sentence-transformers` (the model as its library runs it), `numpy` (the
    independent forward pass of `fieldguide.bert_export`; BERT only) or `auto`: the first when
    sentence-transformers is installed."""
    from fieldguide.bert_export import NotExportable, read_sentence_model

    if reference not in ("auto", "sentence-transformers", "numpy"):
        raise ValueError(f"unknown reference {reference!r}")
    try:
        model = read_sentence_model(model_path, model_id, quantization)
    except NotExportable as exc:
        if reference == "numpy":
            raise ModelUnavailable(f"{exc}; a numpy reference exists for those only.") from exc
        return _export_with_torch(model_path, model_id, quantization, out, reason=str(exc))
    config = {**model["encoder"], "export_version": EXPORT_VERSION, "exporter": BERT_EXPORTER}
    fp32_path = out / "model-fp32.onnx"
    from fieldguide.bert_export import write_graph

    write_graph(model["transformer_dir"], model["bert"], config["input_names"], model_id, fp32_path)
    model["tokenizer"].save(str(out / TOKENIZER_FILE))
    if reference == "auto":
        reference = "sentence-transformers" if _sentence_transformers_installed() else "numpy"
    config["reference"] = reference
    if reference == "numpy":
        from fieldguide.bert_export import reference_vectors

        expected = reference_vectors(model["transformer_dir"], model["bert"], config, model["tokenizer"],
                                     list(PROBE_TEXTS), model_id)
    else:
        expected = _sentence_transformers(model_path).encode(list(PROBE_TEXTS), normalize_embeddings=False,
                                                              convert_to_numpy=True)
    return _check_and_finish(out, fp32_path, config, expected, model_id, quantization)


def _sentence_transformers_installed() -> bool:
    import importlib.util

    try:
        return all(importlib.util.find_spec(name) is not None for name in ("torch", "sentence_transformers"))
    except (ImportError, ValueError):  # a module set to None in sys.modules: not usable
        return False


def _sentence_transformers(model_path: str):
    try:
        import torch  # noqa: F401  (checked here for a clear message)
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ModelUnavailable(f"This needs torch and sentence-transformers ({exc}): {TORCH_EXTRA}.") from exc
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # a "Loading weights" bar is noise here
    try:
        return SentenceTransformer(model_path, device="cpu")
    except Exception as exc:
        raise ModelUnavailable(f"Cannot load the embedding model {model_path!r} to export it ({exc}).") from exc


def _export_with_torch(model_path: str, model_id: str, quantization: str, out: Path, reason: str) -> dict:
    """torch's exporter, for the models the torch-free one does not write (`reason`)."""
    if not _sentence_transformers_installed():
        raise ModelUnavailable(f"{reason}. Exporting it to ONNX needs torch and sentence-transformers: "
                               f"{TORCH_EXTRA}.")
    model = _sentence_transformers(model_path)
    config = _encoder_config(model, model_id, quantization)
    config["exporter"] = "torch.onnx.export"
    config["reference"] = "sentence-transformers"
    transformer = model[0]
    fp32_path = out / "model-fp32.onnx"
    export_fp32_graph(transformer, model_id, config["input_names"], fp32_path)
    transformer.tokenizer.backend_tokenizer.save(str(out / TOKENIZER_FILE))
    reference = model.encode(list(PROBE_TEXTS), normalize_embeddings=False, convert_to_numpy=True)
    return _check_and_finish(out, fp32_path, config, reference, model_id, quantization)


def _check_and_finish(out: Path, fp32_path: Path, config: dict, reference, model_id: str, quantization: str) -> dict:
    """Check the fp32 graph against `reference` (vectors of PROBE_TEXTS), quantise if asked, store
    the optimised graph, check again, and write encoder.json."""
    config["fp32_probe_min_cosine"] = _probe_min_cosine(out, fp32_path.name, config, reference)
    if config["fp32_probe_min_cosine"] < FP32_MIN_COSINE:
        raise ModelUnavailable(
            f"The ONNX export of {model_id} does not reproduce its vectors (cosine "
            f"{config['fp32_probe_min_cosine']:.4f} against {config['reference']} on probe texts), so it is not "
            "kept; set FIELDGUIDE_EMBEDDING_BACKEND=torch.")
    if quantization == "int8":
        _quantize(fp32_path, out / MODEL_FILE)
        fp32_path.unlink()
    else:
        fp32_path.rename(out / MODEL_FILE)
    _store_optimised(out / MODEL_FILE)
    config["probe_min_cosine"] = _probe_min_cosine(out, MODEL_FILE, config, reference)
    floor = INT8_MIN_COSINE if quantization == "int8" else FP32_MIN_COSINE
    if config["probe_min_cosine"] < floor:
        raise ModelUnavailable(
            f"The {quantization} ONNX graph moves {model_id}'s vectors too far (cosine "
            f"{config['probe_min_cosine']:.4f} on probe texts); set FIELDGUIDE_EMBEDDING_QUANTIZATION=none "
            "or FIELDGUIDE_EMBEDDING_BACKEND=torch.")
    (out / ENCODER_CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return config


def export_fp32_graph(transformer, model_id: str, names: list[str], fp32_path: Path) -> None:
    """torch's exporter on a sentence-transformers Transformer module: the graph from the
    inputs `names` to last_hidden_state, batch and sequence dynamic."""
    import warnings

    import torch

    class LastHiddenState(torch.nn.Module):
        """The transformer alone, inputs by position (the exporter's calling convention)."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs):
            return self.inner(**dict(zip(names, inputs))).last_hidden_state

    sample = transformer.tokenizer(["an example", "a second, longer example text"], padding=True,
                                   return_tensors="pt")
    dynamic = {name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the exporter's tracer warnings are about code paths not taken
        try:
            torch.onnx.export(LastHiddenState(transformer.auto_model.eval()), tuple(sample[n] for n in names),
                              str(fp32_path), input_names=names, output_names=["last_hidden_state"],
                              dynamic_axes=dynamic, opset_version=17, dynamo=False)
        except Exception as exc:
            raise ModelUnavailable(f"Cannot export {model_id} to ONNX ({exc}); set "
                                   "FIELDGUIDE_EMBEDDING_BACKEND=torch to use it as it is.") from exc


def _store_optimised(model_path: Path) -> None:
    """Replace the graph by onnxruntime's own optimisation of it (processor-independent level)."""
    import onnxruntime

    optimised = model_path.with_name("model-optimised.onnx")
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(optimised)
    options.log_severity_level = 3
    onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    os.replace(optimised, model_path)


def _quantize(fp32_path: Path, int8_path: Path) -> None:
    """int8 MatMul weights, one scale per output channel; activations quantised per batch at run time."""
    import logging
    import warnings

    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = fp32_path.with_name("model-prepared.onnx")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantiser logs advice through the root logger
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # onnxruntime's recommended preparation: shape inference and graph clean-up first
            quant_pre_process(str(fp32_path), str(prepared), skip_symbolic_shape=True)
            quantize_dynamic(str(prepared), str(int8_path), weight_type=QuantType.QInt8,
                             per_channel=True, op_types_to_quantize=["MatMul"])
    finally:
        root.setLevel(level)
        prepared.unlink(missing_ok=True)


def _encoder_config(model, model_id: str, quantization: str) -> dict:
    """How the model turns texts into vectors, from its own sentence-transformers modules."""
    kinds = [type(module).__name__ for module in model]
    if not kinds or kinds[0] != "Transformer" or not set(kinds) <= SUPPORTED_MODULES or "Pooling" not in kinds:
        raise ModelUnavailable(
            f"The ONNX backend runs Transformer + Pooling (+ Normalize) models; {model_id} has "
            f"{' + '.join(kinds)}. Set FIELDGUIDE_EMBEDDING_BACKEND=torch for it.")
    transformer = model[0]
    tokenizer = transformer.tokenizer
    if not getattr(tokenizer, "is_fast", False):
        raise ModelUnavailable(f"{model_id} has no fast (Rust) tokenizer, which the ONNX backend needs; "
                               "set FIELDGUIDE_EMBEDDING_BACKEND=torch.")
    pooling = model[kinds.index("Pooling")]
    mode = str(getattr(pooling, "pooling_mode", "") or "")
    if mode not in POOLING_MODES:
        raise ModelUnavailable(f"The ONNX backend has no {mode!r} pooling ({model_id}); "
                               "set FIELDGUIDE_EMBEDDING_BACKEND=torch.")
    names = [name for name in ("input_ids", "attention_mask", "token_type_ids")
             if name in tokenizer.model_input_names]
    if names[:2] != ["input_ids", "attention_mask"]:
        raise ModelUnavailable(f"{model_id}'s tokenizer gives {tokenizer.model_input_names}; the ONNX backend "
                               "needs input_ids and attention_mask. Set FIELDGUIDE_EMBEDDING_BACKEND=torch.")
    prompt = ""
    if getattr(model, "default_prompt_name", None):
        prompt = model.prompts.get(model.default_prompt_name, "")
    if prompt and not getattr(pooling, "include_prompt", True):
        raise ModelUnavailable(f"{model_id} leaves its prompt out of pooling, which the ONNX backend does not "
                               "do; set FIELDGUIDE_EMBEDDING_BACKEND=torch.")
    return {
        "model_id": model_id,
        "quantization": quantization,
        "export_version": EXPORT_VERSION,
        "dimension": int((getattr(model, "get_embedding_dimension", None)
                          or model.get_sentence_embedding_dimension)()),
        "max_seq_length": int(model.max_seq_length),
        "pooling": mode,
        "normalize": "Normalize" in kinds,
        "prompt": prompt,
        "input_names": names,
        "pad_token": tokenizer.pad_token,
        "pad_id": int(tokenizer.pad_token_id or 0),
    }


def _probe_min_cosine(folder: Path, model_file: str, config: dict, reference) -> float:
    import numpy as np

    from fieldguide.onnx_embeddings import OnnxEncoder

    encoder = OnnxEncoder(folder, config=config, model_file=model_file)
    vectors = encoder.encode(list(PROBE_TEXTS), batch_size=len(PROBE_TEXTS))
    reference = np.asarray(reference, dtype=np.float32)
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    if not config["normalize"]:
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return round(float((vectors * reference).sum(axis=1).min()), 6)
