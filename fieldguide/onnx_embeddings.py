"""The ONNX backend at run time: the exported model through OpenVINO or ONNX Runtime, without torch.

`OnnxEncoder` reads an export folder (`fieldguide.onnx_export`): the model's own fast
tokenizer (truncated at its maximum sequence length, padded to the longest text of a batch),
the ONNX graph, and the pooling and normalisation its sentence-transformers modules named.
Importing the runtime, tokenizers and numpy and opening the model takes a fraction of a
second, against several for torch and sentence-transformers, which is what lets `ingest` and
`ask` start quickly.

Two runtimes run the same fp32 graph (`runtime`):
* `openvino` (`OpenVinoModel`): on a CPU with bfloat16 instructions (AVX512-BF16, AMX) its
  matrix products can take bf16 inputs with fp32 sums; the vectors stay within cosine 0.9999 of
  the fp32 ones (0.99998 on average over the 3,600 chunks of the development docs, 0.99994 at the
  lowest), as close as the export check asks of an fp32 graph, so the two share an index
  (`fieldguide.embedding.VECTOR_SPACES`). Whether bf16 is faster depends on the CPU: about twice
  fp32's throughput on one with native bf16 units, 0.6-0.7x on another that lists the same flag
  (docs/BENCHMARKS.md). So the first start on a machine times both on the same probe inputs and
  keeps the faster (`PRECISION_FILE` beside the export, per machine); without bf16
  instructions it computes in fp32. The compiled model is cached beside the export, so a later
  start skips the compile.
* `onnxruntime` (`OnnxRuntimeModel`): fp32 exactly as exported, and the only one for an int8 graph.

`OnnxEmbeddings` gives it the two methods the pipeline and LangChain call, `embed_documents`
and `embed_query`. An int8 graph encodes one text per run: dynamic quantisation scales the
activations of a whole run at once, so in a batch a text's vector would depend on the texts
beside it and on their padding (cosine 0.993 between the two ways on the development docs),
and a question, always alone, would be encoded unlike the chunks. Alone, a text gets the same
vector whichever files are ingested with it, and no run pads. fp32 graphs encode in batches,
longest texts first, and a batch ends where the texts get much shorter than its first
(`BATCH_LENGTH_RATIO`): a run costs its number of texts times its longest, so one list item
of 90 tokens would otherwise make twenty sentences of 20 pay for 90 each (the evidence step
embeds such mixed lists for every question). Vectors come back in the order given.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from functools import lru_cache
from pathlib import Path

ENCODER_CONFIG = "encoder.json"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
ALLOW_SPINNING = "session.intra_op.allow_spinning"
BATCH_LENGTH_RATIO = 0.7  # a run ends before a text shorter than this share of its first (characters)
RUNTIMES = ("openvino", "onnxruntime")
OPENVINO_CACHE = "openvino-cache"  # beside the export: the compiled model, reused at the next start
# OpenVINO's CPU plugin keeps the kernels it prepared for each input shape (texts x tokens) it has
# seen, 5,000 shapes by default: over thousands of questions and contexts of every length a
# process grew by about 1 MB a shape (242 MB to 3.1 GB over 3,000 calls). A few dozen keep the
# common shapes warm (a question's embedding took 3.7 ms with 50 against 8.5 with none kept) and
# memory flat (docs/BENCHMARKS.md, "bf16 arithmetic").
RUNTIME_CACHE_SHAPES = 64
# Which arithmetic OpenVINO runs the fp32 graph in on this machine, measured once: a JSON record
# beside the export, {"machine", "precision", "probe_ms"}; a record made on another machine (or
# OpenVINO version) is measured again.
PRECISION_FILE = "openvino-precision.json"
PRECISIONS = {"bf16": "bf16", "fp32": "f32"}  # ours -> OpenVINO's INFERENCE_PRECISION_HINT
# The probe: a batch of chunk-sized inputs (an ingest's work) and a question (a query's), each
# timed best of `PROBE_REPEATS` after one warm-up run; the precision with the lower sum wins.
PROBE_SHAPES = ((16, 128), (1, 24))
PROBE_REPEATS = 3


def cpu_count() -> int:
    """The cores this process may run on (its affinity), which a container may limit below the machine's."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class OnnxRuntimeModel:
    """The graph through ONNX Runtime: fp32 as exported (or the int8 graph)."""

    runtime = "onnxruntime"
    precision = "fp32"

    def __init__(self, path: Path):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # no warnings about initializers on stderr
        # ONNX Runtime's pool threads spin for tens of milliseconds after each run, waiting for more
        # work. A question's embedding is followed at once by the chat model reading its prompt, and
        # on shared cores the spinning takes CPU from it; encoding itself was no slower without it.
        options.add_session_config_entry(ALLOW_SPINNING, "0")
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def run(self, feed: dict):
        return self.session.run(None, feed)[0]


def openvino_bf16(core=None) -> bool:
    """Whether OpenVINO can compute in bfloat16 on this CPU (it has the instructions for it)."""
    if core is None:
        import openvino

        core = openvino.Core()
    return "BF16" in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")


@lru_cache(maxsize=1)
def cpu_description() -> tuple[str, tuple[str, ...] | None]:
    """(the CPU's model name, its flags) as Linux lists them; flags None where it does not."""
    model, flags = "", None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if not model and line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif flags is None and line.startswith("flags"):
                flags = tuple(line.split(":", 1)[1].split())
    except OSError:
        pass
    if not model:
        import platform

        model = platform.processor() or platform.machine()
    return model, flags


@lru_cache(maxsize=1)
def machine_key() -> str:
    """What a precision measurement holds for: the CPU model, its bf16 flags, the cores this
    process may use and OpenVINO's version. Read without importing OpenVINO."""
    from importlib.metadata import PackageNotFoundError, version

    model, flags = cpu_description()
    flags = sorted(f for f in flags or () if "bf16" in f or f.startswith("amx"))
    try:
        openvino_version = version("openvino")
    except PackageNotFoundError:
        openvino_version = "none"
    return f"{model} | {' '.join(flags)} | {cpu_count()} cores | openvino {openvino_version}"


def recorded_precision(folder: Path) -> str | None:
    """The precision measured faster on this machine for the export in `folder`, if measured."""
    try:
        record = json.loads((Path(folder) / PRECISION_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("machine") != machine_key():
        return None
    return record.get("precision") if record.get("precision") in PRECISIONS else None


def record_precision(folder: Path, precision: str, probe_ms: dict[str, float]) -> None:
    """Keep the measurement beside the export (written whole, or not at all: a read-only folder
    measures again at the next start)."""
    payload = json.dumps({"machine": machine_key(), "precision": precision, "probe_ms": probe_ms}, indent=1)
    try:
        with tempfile.NamedTemporaryFile("w", dir=folder, prefix=".precision-", suffix=".json",
                                         delete=False, encoding="utf-8") as handle:
            handle.write(payload)
        os.replace(handle.name, Path(folder) / PRECISION_FILE)
    except OSError:
        pass


def faster_precision(probe_ms: dict[str, float]) -> str:
    """bf16 only when it measured faster: equal times keep fp32's exact arithmetic."""
    return "bf16" if probe_ms.get("bf16", float("inf")) < probe_ms.get("fp32", float("inf")) else "fp32"


def _probe_inputs(compiled, shape: tuple[int, int]) -> dict:
    import numpy as np

    texts, tokens = shape
    ids = np.random.default_rng(0).integers(1000, 2000, size=(texts, tokens), dtype=np.int64)
    feed = {}
    for port in compiled.inputs:
        name = port.get_any_name()
        feed[name] = ids if "input_ids" in name else (
            np.ones_like(ids) if "mask" in name else np.zeros_like(ids))
    return feed


def probe_ms(compiled) -> float:
    """Milliseconds the probe takes with `compiled` (best of `PROBE_REPEATS` per shape, summed)."""
    request = compiled.create_infer_request()
    total = 0.0
    for shape in PROBE_SHAPES:
        feed = _probe_inputs(compiled, shape)
        request.infer(feed)  # the first run of a shape prepares its kernels
        best = float("inf")
        for _ in range(PROBE_REPEATS):
            started = time.perf_counter()
            request.infer(feed)
            best = min(best, time.perf_counter() - started)
        total += best * 1000.0
    return total


class OpenVinoModel:
    """The graph through OpenVINO's CPU plugin, in bf16 where that measured faster on this CPU."""

    runtime = "openvino"

    def __init__(self, path: Path, threads: int | None = None, precision: str | None = None):
        import openvino

        core = openvino.Core()
        path = Path(path)
        cache = path.parent / OPENVINO_CACHE
        try:
            cache.mkdir(exist_ok=True)
            core.set_property({"CACHE_DIR": str(cache)})
        except OSError:  # a read-only model folder: compile at every start instead
            pass
        base = {
            "INFERENCE_NUM_THREADS": threads or cpu_count(),
            "PERFORMANCE_HINT": "LATENCY",  # one text or one batch at a time, all cores on it
            "CPU_RUNTIME_CACHE_CAPACITY": RUNTIME_CACHE_SHAPES,
        }

        def compiled_in(chosen: str):
            return core.compile_model(str(path), "CPU", {**base, "INFERENCE_PRECISION_HINT": PRECISIONS[chosen]})

        if not openvino_bf16(core):
            precision = "fp32"
        precision = precision or recorded_precision(path.parent)
        if precision is None:  # the first start on this machine: time both, keep the faster
            candidates = {name: compiled_in(name) for name in PRECISIONS}
            measured = {name: round(probe_ms(compiled), 2) for name, compiled in candidates.items()}
            precision = faster_precision(measured)
            record_precision(path.parent, precision, measured)
            self.compiled = candidates[precision]
        else:
            self.compiled = compiled_in(precision)
        self.precision = precision
        self.config = {**base, "INFERENCE_PRECISION_HINT": PRECISIONS[precision]}
        self._request = self.compiled.create_infer_request()
        self._lock = threading.Lock()  # an infer request runs one call at a time; the service's threads share it

    def run(self, feed: dict):
        with self._lock:
            return self._request.infer(feed)[0]  # a copy (outputs are not shared by default)


class OnnxEncoder:
    def __init__(self, folder: Path, *, config: dict | None = None, model_file: str = MODEL_FILE,
                 runtime: str = "onnxruntime"):
        import numpy as np
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.config = config or json.loads((folder / ENCODER_CONFIG).read_text(encoding="utf-8"))
        self.dimension = int(self.config["dimension"])
        self._np = np
        self._prompt = self.config.get("prompt") or ""
        self._names = list(self.config["input_names"])
        self._pooling = self.config["pooling"]
        self._normalize = bool(self.config["normalize"])
        self.one_text_per_run = self.config.get("quantization") == "int8"
        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        tokenizer.enable_truncation(max_length=int(self.config["max_seq_length"]))
        tokenizer.enable_padding(pad_id=int(self.config["pad_id"]), pad_token=self.config["pad_token"] or "[PAD]")
        self._tokenizer = tokenizer
        if runtime not in RUNTIMES:
            raise ValueError(f"unknown runtime {runtime!r}: expected one of {RUNTIMES}")
        if runtime == "openvino" and self.one_text_per_run:
            runtime = "onnxruntime"  # the int8 graph's QDQ scales are ONNX Runtime's; OpenVINO runs fp32 graphs here
        self.model = OpenVinoModel(folder / model_file) if runtime == "openvino" else OnnxRuntimeModel(folder / model_file)
        self.runtime = self.model.runtime
        self.precision = self.model.precision

    def encode(self, texts: list[str], batch_size: int = 64):
        """float32 array (len(texts), dimension), rows in the order of `texts`."""
        np = self._np
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        prompted = [self._prompt + text for text in texts] if self._prompt else list(texts)
        # longest first (characters stand in for tokens), so each batch pads little
        order = sorted(range(len(texts)), key=lambda i: -len(prompted[i]))
        for rows in self._batches(order, [len(text) for text in prompted], batch_size):
            out[rows] = self._encode_batch([prompted[i] for i in rows])
        return out

    def _batches(self, order: list[int], lengths: list[int], batch_size: int) -> list[list[int]]:
        """`order` (longest first) cut into runs: at most `batch_size` texts, none shorter than
        `BATCH_LENGTH_RATIO` of the run's first; one text a run for an int8 graph."""
        size = 1 if self.one_text_per_run else max(1, int(batch_size))
        batches: list[list[int]] = []
        for index in order:
            current = batches[-1] if batches else None
            if current is None or len(current) >= size or lengths[index] < BATCH_LENGTH_RATIO * lengths[current[0]]:
                batches.append([index])
            else:
                current.append(index)
        return batches

    def _encode_batch(self, texts: list[str]):
        np = self._np
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._names:
            feed["token_type_ids"] = np.array([e.type_ids for e in encoded], dtype=np.int64)
        hidden = self.model.run(feed)
        vectors = self._pool(hidden, mask)
        if self._normalize:
            vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return vectors

    def _pool(self, hidden, mask):
        np = self._np
        weights = mask[..., None].astype(np.float32)
        if self._pooling == "cls":
            return hidden[np.arange(len(hidden)), mask.argmax(axis=1)].astype(np.float32)
        if self._pooling == "max":
            return np.where(weights > 0, hidden, -np.inf).max(axis=1).astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        counts = np.clip(weights.sum(axis=1), 1e-9, None)
        return (summed / (counts if self._pooling == "mean" else np.sqrt(counts))).astype(np.float32)


class OnnxEmbeddings:
    """LangChain-style embeddings (`embed_documents`, `embed_query`) over an `OnnxEncoder`."""

    def __init__(self, folder: Path, batch_size: int = 64, runtime: str = "onnxruntime"):
        self.folder = Path(folder)
        self.encoder = OnnxEncoder(self.folder, runtime=runtime)
        self.batch_size = int(batch_size)
        self.dimension = self.encoder.dimension

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encoder.encode(list(texts), self.batch_size).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encoder.encode([text], 1)[0].tolist()
