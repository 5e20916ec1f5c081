"""BERT-family sentence-transformers models exported to ONNX without torch.

The onnx embedding backend's one-off export (`fieldguide.onnx_export`) used to load the model
with sentence-transformers and trace it with torch's exporter: several GB of torch installed for
one minute of work. A BERT encoder is a short, fixed computation, so for those models (config.json
`model_type` `bert`, absolute positions, exact GELU: all-MiniLM-L6-v2, the packaged default, is
one) the graph is written here from the weights themselves:

* `read_sentence_model` reads what sentence-transformers would read, from the files directly:
  modules.json (Transformer + Pooling (+ Normalize)), sentence_bert_config.json (maximum length,
  lower-casing), 1_Pooling/config.json, config_sentence_transformers.json (the default prompt),
  tokenizer.json / tokenizer_config.json (pad token, input names, the BERT normaliser's flags)
  and config.json. Nothing of sentence-transformers or transformers is imported.
* `build_graph` writes the fp32 graph with onnx.helper from standard ops (opset 17): the three
  embedding Gathers and a LayerNormalization, then per layer the Q/K/V MatMul+Add, heads by
  Reshape/Transpose, scaled QK^T plus an additive mask made from attention_mask, Softmax, the
  context, the output dense + residual + LayerNormalization, the intermediate dense with exact
  (erf) GELU, and the output dense + residual + LayerNormalization. Inputs input_ids,
  attention_mask (and token_type_ids), output last_hidden_state, batch and sequence dynamic: the
  graph torch's exporter wrote, so the rest of the export (quantisation, onnxruntime's stored
  optimisation) is unchanged.
* `reference_vectors` is an independent plain-numpy forward pass of the same weights (float64,
  one text at a time, so no padding and no mask): what the export is checked against when
  sentence-transformers is not installed.

Weights are read with the `safetensors` package's numpy API; a model that ships only
pytorch_model.bin (a pickle of torch tensors) needs torch to read, and gets the torch path.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from fieldguide.errors import TORCH_EXTRA, ModelUnavailable

SUPPORTED_MODULES = {"Transformer", "Pooling", "Normalize"}
POOLING_MODES = ("mean", "cls", "max", "mean_sqrt_len_tokens")
# sentence-transformers' older Pooling config: one boolean per mode
LEGACY_POOLING_KEYS = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                       "pooling_mode_mean_tokens": "mean", "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                       "pooling_mode_weightedmean_tokens": "weightedmean", "pooling_mode_lasttoken": "lasttoken"}
SENTENCE_CONFIG_FILES = ("sentence_bert_config.json", "sentence_roberta_config.json",
                         "sentence_distilbert_config.json")
BERT_INPUT_NAMES = ("input_ids", "token_type_ids", "attention_mask")  # BertTokenizer's model_input_names
OPSET = 17  # the first with LayerNormalization
IR_VERSION = 8  # opset 17's: what onnxruntime and OpenVINO read without complaint
# Added to the scores of padded keys: exp() of it underflows to exactly 0 in fp32, as torch's
# float32-minimum mask does, and unlike that minimum it stays finite in bf16 arithmetic.
MASK_VALUE = -1e9
EXPORTER = "bert-onnx-helper"


class NotExportable(Exception):
    """The model is a valid sentence-transformers model that this exporter does not build (not
    BERT-family, other activation, weights only as a torch pickle): the torch exporter's job."""


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelUnavailable(f"Cannot read {path} ({exc}).") from exc
    except ValueError as exc:
        raise ModelUnavailable(f"{path} is not valid JSON ({exc}).") from exc
    return data


def _optional_json(path: Path) -> dict:
    return _read_json(path) if path.is_file() else {}


def resolve_model_dir(model_path: str) -> Path:
    """A local model folder, or a hub name from huggingface_hub's cache (downloaded unless offline)."""
    root = Path(model_path)
    if root.is_dir():
        return root
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model_path, allow_patterns=["*.json", "*.safetensors", "*.txt",
                                                                  "1_Pooling/*", "2_Normalize/*"]))
    except Exception as exc:  # offline, unknown name, no huggingface_hub
        raise ModelUnavailable(f"Cannot find the embedding model {model_path!r} ({exc}); set "
                               "FIELDGUIDE_EMBEDDING_MODEL to a local sentence-transformers model folder.") from exc


def _token_text(value) -> str | None:
    """A special token as tokenizer configs write it: a string, or an AddedToken dict."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else None


def _pooling_mode(config: dict, model_id: str) -> tuple[str, bool]:
    mode = config.get("pooling_mode")
    if mode is None:
        mode = [name for key, name in LEGACY_POOLING_KEYS.items() if config.get(key)]
    if isinstance(mode, (list, tuple)):
        mode = mode[0] if len(mode) == 1 else "+".join(mode)
    mode = str(mode or "")
    if mode not in POOLING_MODES:
        raise ModelUnavailable(f"The ONNX backend has no {mode!r} pooling ({model_id}); "
                               "set FIELDGUIDE_EMBEDDING_BACKEND=torch.")
    return mode, bool(config.get("include_prompt", True))


def read_sentence_model(model_path: str, model_id: str, quantization: str) -> dict:
    """How the model turns texts into vectors, read from its own files: {"encoder": the
    encoder.json config, "transformer_dir", "bert": config.json, "tokenizer": a `tokenizers`
    Tokenizer set up as sentence-transformers would use it}. Raises ModelUnavailable for models
    no ONNX export runs, NotExportable for those only the torch exporter can write."""
    root = resolve_model_dir(model_path)
    modules, kinds = _sentence_modules(root, model_id)
    transformer_dir = root / (modules[0].get("path") or "")
    pooling_path = modules[kinds.index("Pooling")].get("path")
    pooling_config = _optional_json(root / pooling_path / "config.json") if pooling_path else {}
    mode, include_prompt = _pooling_mode(pooling_config or {"pooling_mode": "mean"}, model_id)

    bert = _read_json(transformer_dir / "config.json")
    _check_exportable(bert, transformer_dir, model_id)

    sentence_config = {}
    for name in SENTENCE_CONFIG_FILES:
        if (transformer_dir / name).is_file():
            sentence_config = _read_json(transformer_dir / name)
            break
    tokenizer_config = _optional_json(transformer_dir / "tokenizer_config.json")
    special_tokens = _optional_json(transformer_dir / "special_tokens_map.json")
    tokenizer = _tokenizer(transformer_dir / "tokenizer.json", tokenizer_config,
                           bool(sentence_config.get("do_lower_case", False)))

    max_seq_length = _max_seq_length(sentence_config, tokenizer_config, bert, model_id)

    available = tokenizer_config.get("model_input_names") or list(BERT_INPUT_NAMES)
    names = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in available]
    if names[:2] != ["input_ids", "attention_mask"]:
        raise ModelUnavailable(f"{model_id}'s tokenizer gives {available}; the ONNX backend "
                               "needs input_ids and attention_mask. Set FIELDGUIDE_EMBEDDING_BACKEND=torch.")
    padding = tokenizer.padding or {}
    pad_token = (_token_text(tokenizer_config.get("pad_token")) or _token_text(special_tokens.get("pad_token"))
                 or padding.get("pad_token") or "[PAD]")
    pad_id = tokenizer.token_to_id(pad_token)
    if pad_id is None:
        pad_id = int(bert.get("pad_token_id") or 0)

    st_config = _optional_json(root / "config_sentence_transformers.json")
    prompt = ""
    if st_config.get("default_prompt_name"):
        prompt = (st_config.get("prompts") or {}).get(st_config["default_prompt_name"], "")
    if prompt and not include_prompt:
        raise ModelUnavailable(f"{model_id} leaves its prompt out of pooling, which the ONNX backend does not "
                               "do; set FIELDGUIDE_EMBEDDING_BACKEND=torch.")
    encoder = {
        "model_id": model_id,
        "quantization": quantization,
        "dimension": int(bert["hidden_size"]),
        "max_seq_length": max_seq_length,
        "pooling": mode,
        "normalize": "Normalize" in kinds,
        "prompt": prompt,
        "input_names": names,
        "pad_token": pad_token,
        "pad_id": int(pad_id),
    }
    return {"encoder": encoder, "transformer_dir": transformer_dir, "bert": bert, "tokenizer": tokenizer}


def _sentence_modules(root: Path, model_id: str) -> tuple[list, list[str]]:
    """The model's modules (modules.json, or a plain transformers folder's Transformer + Pooling)
    and their kinds; ModelUnavailable unless they are Transformer + Pooling (+ Normalize)."""
    modules_file = root / "modules.json"
    if modules_file.is_file():
        modules = _read_json(modules_file)
        if not isinstance(modules, list):
            raise ModelUnavailable(f"{modules_file} should list the model's modules.")
    else:  # a plain transformers folder: sentence-transformers reads it as Transformer + mean pooling
        modules = [{"path": "", "type": "Transformer"}, {"path": None, "type": "Pooling"}]
    kinds = [str(module.get("type", "")).rsplit(".", 1)[-1] for module in modules]
    if not kinds or kinds[0] != "Transformer" or not set(kinds) <= SUPPORTED_MODULES or "Pooling" not in kinds:
        raise ModelUnavailable(
            f"The ONNX backend runs Transformer + Pooling (+ Normalize) models; {model_id} has "
            f"{' + '.join(kinds)}. Set FIELDGUIDE_EMBEDDING_BACKEND=torch for it.")
    return modules, kinds


def _check_exportable(bert: dict, transformer_dir: Path, model_id: str) -> None:
    """NotExportable (or ModelUnavailable) unless the torch-free exporter writes this model."""
    model_type = bert.get("model_type")
    if model_type != "bert":
        raise NotExportable(f"{model_id} is a {model_type!r} model; the torch-free exporter writes BERT-family "
                            "models (config.json model_type bert)")
    if bert.get("position_embedding_type", "absolute") != "absolute":
        raise NotExportable(f"{model_id} uses {bert['position_embedding_type']!r} position embeddings; the "
                            "torch-free exporter writes absolute ones")
    if bert.get("hidden_act", "gelu") != "gelu":
        raise NotExportable(f"{model_id} uses the {bert['hidden_act']!r} activation; the torch-free exporter "
                            "writes exact (erf) GELU")
    if bert.get("is_decoder") or bert.get("add_cross_attention"):
        raise NotExportable(f"{model_id} is a BERT decoder; the torch-free exporter writes encoders")
    if not (transformer_dir / "model.safetensors").is_file():
        raise NotExportable(f"{model_id} has no model.safetensors (its weights are a torch pickle, which only "
                            "torch reads)")
    if not (transformer_dir / "tokenizer.json").is_file():
        raise ModelUnavailable(f"{model_id} has no tokenizer.json (a fast tokenizer), which the ONNX backend "
                               "needs; set FIELDGUIDE_EMBEDDING_BACKEND=torch.")


def _max_seq_length(sentence_config: dict, tokenizer_config: dict, bert: dict, model_id: str) -> int:
    # sentence-transformers: its own max_seq_length, else the tokenizer's model_max_length capped
    # at the model's positions
    max_seq_length = sentence_config.get("max_seq_length")
    for key in ("processor_kwargs", "tokenizer_args"):
        if max_seq_length is None and isinstance(sentence_config.get(key), dict):
            max_seq_length = sentence_config[key].get("model_max_length")
    if max_seq_length is None:
        max_seq_length = min(int(tokenizer_config.get("model_max_length") or 10**30),
                             int(bert.get("max_position_embeddings", 512)))
    max_seq_length = int(max_seq_length)
    if not 0 < max_seq_length <= int(bert.get("max_position_embeddings", 512)):
        raise ModelUnavailable(f"{model_id}: max_seq_length {max_seq_length} is beyond its "
                               f"{bert.get('max_position_embeddings')} positions.")
    return max_seq_length


def _tokenizer(path: Path, tokenizer_config: dict, lower_case: bool):
    """The model's fast tokenizer as transformers and sentence-transformers set it up: a BERT
    normaliser takes the tokenizer config's flags (BertTokenizerFast does that on load), and
    sentence-transformers' do_lower_case puts a Lowercase first. Truncation and padding are
    left to the encoder (its maximum length, the longest text of a batch)."""
    from tokenizers import Tokenizer, normalizers

    tokenizer = Tokenizer.from_file(str(path))
    state = json.loads(tokenizer.to_str()).get("normalizer") or {}
    if state.get("type") == "BertNormalizer":
        flags = {"lowercase": tokenizer_config.get("do_lower_case", state.get("lowercase", True)),
                 "strip_accents": tokenizer_config.get("strip_accents", state.get("strip_accents")),
                 "handle_chinese_chars": tokenizer_config.get("tokenize_chinese_chars",
                                                               state.get("handle_chinese_chars", True))}
        if any(state.get(key) != value for key, value in flags.items()):
            tokenizer.normalizer = normalizers.BertNormalizer(clean_text=state.get("clean_text", True), **flags)
            state = json.loads(tokenizer.to_str()).get("normalizer") or {}
    if lower_case and not _lowercases(state):
        current = [tokenizer.normalizer] if tokenizer.normalizer is not None else []
        tokenizer.normalizer = normalizers.Sequence([normalizers.Lowercase(), *current])
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _lowercases(state: dict) -> bool:
    if state.get("type") == "Lowercase" or (state.get("type") == "BertNormalizer" and state.get("lowercase")):
        return True
    return any(_lowercases(inner) for inner in state.get("normalizers") or [])


class Weights:
    """The model's tensors by their BERT names, whatever prefix or LayerNorm naming the checkpoint used."""

    def __init__(self, path: Path, model_id: str):
        from safetensors.numpy import load_file

        try:
            self.tensors = load_file(str(path))
        except Exception as exc:
            raise ModelUnavailable(f"Cannot read the weights of {model_id} from {path} ({exc}).") from exc
        self.model_id = model_id
        self.prefix = "bert." if "embeddings.word_embeddings.weight" not in self.tensors and \
            "bert.embeddings.word_embeddings.weight" in self.tensors else ""

    def __call__(self, name: str):
        import numpy as np

        for candidate in (name, name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias",
                                                                                              "LayerNorm.beta")):
            tensor = self.tensors.get(self.prefix + candidate)
            if tensor is not None:
                return np.asarray(tensor, dtype=np.float32)
        raise ModelUnavailable(f"{self.model_id}'s weights have no {self.prefix + name}; is it a BERT model?")


def _layer(i: int, name: str) -> str:
    return f"encoder.layer.{i}.{name}"


class _Graph:
    """The nodes and initializers of the ONNX graph being built, in the order they are added."""

    def __init__(self, weights: Weights, eps: float):
        self.weights = weights
        self.eps = eps
        self.nodes: list = []
        self.initializers: list = []

    def constant(self, name: str, value) -> str:
        import numpy as np
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, **attributes) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    def dense(self, x: str, prefix: str, out: str) -> str:
        """torch's Linear: x @ W^T + b, W stored transposed ([in, out]) as torch's exporter does."""
        import numpy as np

        weights = self.weights
        weight = self.constant(f"{prefix}.weight", np.ascontiguousarray(weights(f"{prefix}.weight").T))
        bias = self.constant(f"{prefix}.bias", weights(f"{prefix}.bias"))
        return self.node("Add", [self.node("MatMul", [x, weight], f"{out}/matmul"), bias], out)

    def layer_norm(self, x: str, prefix: str, out: str) -> str:
        weights = self.weights
        return self.node("LayerNormalization", [x, self.constant(f"{prefix}.weight", weights(f"{prefix}.weight")),
                                                self.constant(f"{prefix}.bias", weights(f"{prefix}.bias"))],
                         out, axis=-1, epsilon=self.eps)


def build_graph(weights: Weights, bert: dict, names: list[str]):
    """The fp32 ONNX graph: inputs `names` (int64, [batch, sequence]) to last_hidden_state."""
    from onnx import TensorProto, helper

    hidden = int(bert["hidden_size"])
    heads = int(bert["num_attention_heads"])
    layers = int(bert["num_hidden_layers"])
    eps = float(bert.get("layer_norm_eps", 1e-12))
    if hidden % heads:
        raise ModelUnavailable(f"{weights.model_id}: hidden size {hidden} is not a multiple of {heads} heads.")
    graph_ = _Graph(weights, eps)
    x = _embeddings(graph_, names)
    additive = _additive_mask(graph_)
    x = _encoder_layers(graph_, x, additive, layers, heads, hidden)
    if layers == 0:
        x = graph_.node("Identity", [x], "last_hidden_state")

    dims = ["batch", "sequence"]
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in names]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*dims, hidden])]
    graph = helper.make_graph(graph_.nodes, "bert", inputs, outputs, graph_.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="fieldguide",
                              ir_version=IR_VERSION)
    return model


def _embeddings(g: _Graph, names: list[str]) -> str:
    """words + positions 0..sequence-1 + token types, then LayerNorm."""
    import numpy as np

    weights, constant, node = g.weights, g.constant, g.node
    one = constant("const_one_i64", np.array(1, dtype=np.int64))
    zero = constant("const_zero_i64", np.array(0, dtype=np.int64))
    shape = node("Shape", ["input_ids"], "emb/shape")
    length = node("Gather", [shape, one], "emb/sequence_length", axis=0)
    positions = node("Range", [zero, length, one], "emb/position_ids")
    words = node("Gather", [constant("embeddings.word_embeddings.weight",
                                     weights("embeddings.word_embeddings.weight")), "input_ids"], "emb/words")
    position_table = constant("embeddings.position_embeddings.weight", weights("embeddings.position_embeddings.weight"))
    summed = node("Add", [words, node("Gather", [position_table, positions], "emb/positions")], "emb/words_positions")
    type_table = weights("embeddings.token_type_embeddings.weight")
    if "token_type_ids" in names:
        types = node("Gather", [constant("embeddings.token_type_embeddings.weight", type_table), "token_type_ids"],
                     "emb/types")
    else:  # a tokenizer without token types: every token is type 0, as BERT defaults them
        types = constant("emb/type_zero", type_table[0])
    return g.layer_norm(node("Add", [summed, types], "emb/sum"), "embeddings.LayerNorm", "emb/out")


def _additive_mask(g: _Graph) -> str:
    """The additive mask, [batch, 1, 1, sequence]: 0 for real tokens, MASK_VALUE for padding."""
    import numpy as np
    from onnx import TensorProto

    constant, node = g.constant, g.node
    mask = node("Cast", [node("Unsqueeze", ["attention_mask", constant("const_axes_12", np.array([1, 2], dtype=np.int64))],
                              "mask/unsqueezed")], "mask/float", to=TensorProto.FLOAT)
    inverted = node("Sub", [constant("const_one_f32", np.array(1.0, dtype=np.float32)), mask], "mask/inverted")
    return node("Mul", [inverted, constant("const_mask_value", np.array(MASK_VALUE, dtype=np.float32))],
                "mask/additive")


def _encoder_layers(g: _Graph, x: str, additive: str, layers: int, heads: int, hidden: int) -> str:
    """The encoder's layers: self-attention, then the feed-forward block with exact GELU, each
    with its residual and LayerNorm; the last one's output is last_hidden_state."""
    import numpy as np

    constant, node, dense, layer_norm = g.constant, g.node, g.dense, g.layer_norm
    head_size = hidden // heads
    to_heads = constant("const_to_heads", np.array([0, 0, heads, head_size], dtype=np.int64))
    to_hidden = constant("const_to_hidden", np.array([0, 0, hidden], dtype=np.int64))
    scale = constant("const_sqrt_head_size", np.array(math.sqrt(head_size), dtype=np.float32))
    sqrt2 = constant("const_sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    one_f = "const_one_f32"
    half = constant("const_half", np.array(0.5, dtype=np.float32))
    for i in range(layers):
        p = f"layer{i}"

        def split(name: str, perm: list[int]) -> str:
            projected = dense(x, _layer(i, f"attention.self.{name}"), f"{p}/{name}")
            return node("Transpose", [node("Reshape", [projected, to_heads], f"{p}/{name}/heads")],
                        f"{p}/{name}/transposed", perm=perm)

        query = split("query", [0, 2, 1, 3])  # [batch, heads, sequence, head_size]
        key = split("key", [0, 2, 3, 1])  # [batch, heads, head_size, sequence]
        value = split("value", [0, 2, 1, 3])
        scores = node("Div", [node("MatMul", [query, key], f"{p}/scores/raw"), scale], f"{p}/scores/scaled")
        probabilities = node("Softmax", [node("Add", [scores, additive], f"{p}/scores/masked")],
                             f"{p}/probabilities", axis=-1)
        context = node("MatMul", [probabilities, value], f"{p}/context/heads")
        context = node("Reshape", [node("Transpose", [context], f"{p}/context/transposed", perm=[0, 2, 1, 3]),
                                   to_hidden], f"{p}/context")
        attention = dense(context, _layer(i, "attention.output.dense"), f"{p}/attention/dense")
        attention = layer_norm(node("Add", [attention, x], f"{p}/attention/residual"),
                               _layer(i, "attention.output.LayerNorm"), f"{p}/attention/out")
        inner = dense(attention, _layer(i, "intermediate.dense"), f"{p}/intermediate")
        # exact GELU: x * 0.5 * (1 + erf(x / sqrt 2))
        erf = node("Erf", [node("Div", [inner, sqrt2], f"{p}/gelu/scaled")], f"{p}/gelu/erf")
        gelu = node("Mul", [node("Mul", [inner, node("Add", [erf, one_f], f"{p}/gelu/plus_one")], f"{p}/gelu/product"),
                            half], f"{p}/gelu")
        out = dense(gelu, _layer(i, "output.dense"), f"{p}/output/dense")
        x = layer_norm(node("Add", [out, attention], f"{p}/output/residual"), _layer(i, "output.LayerNorm"),
                       f"{p}/out" if i < layers - 1 else "last_hidden_state")
    return x


def write_graph(transformer_dir: Path, bert: dict, names: list[str], model_id: str, path: Path) -> None:
    import onnx

    model = build_graph(Weights(transformer_dir / "model.safetensors", model_id), bert, names)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise ModelUnavailable(f"The ONNX graph written for {model_id} is not valid ONNX ({exc}).") from exc
    onnx.save_model(model, str(path))


def reference_vectors(transformer_dir: Path, bert: dict, encoder: dict, tokenizer, texts: list[str], model_id: str):
    """The texts' vectors by a plain numpy forward pass (float64, each text alone): independent
    of the ONNX graph, its runtime and its padding, for checking them."""
    import numpy as np

    weights = Weights(transformer_dir / "model.safetensors", model_id)

    def w(name: str):
        return weights(name).astype(np.float64)

    def norm(x, prefix: str):
        mean = x.mean(axis=-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(variance + float(bert.get("layer_norm_eps", 1e-12))) * w(f"{prefix}.weight") \
            + w(f"{prefix}.bias")

    erf = np.frompyfunc(math.erf, 1, 1)
    heads = int(bert["num_attention_heads"])
    size = int(bert["hidden_size"]) // heads
    tokenizer = tokenizer.__class__.from_str(tokenizer.to_str())  # a copy: truncation is set on it
    tokenizer.enable_truncation(max_length=int(encoder["max_seq_length"]))
    prompt = encoder.get("prompt") or ""
    vectors = []
    for text in texts:
        encoding = tokenizer.encode(prompt + text)
        ids = np.array(encoding.ids)
        x = w("embeddings.word_embeddings.weight")[ids] + w("embeddings.position_embeddings.weight")[:len(ids)]
        types = np.array(encoding.type_ids) if "token_type_ids" in encoder["input_names"] else np.zeros_like(ids)
        x = norm(x + w("embeddings.token_type_embeddings.weight")[types], "embeddings.LayerNorm")
        for i in range(int(bert["num_hidden_layers"])):
            def project(name, source):
                return source @ w(_layer(i, f"{name}.weight")).T + w(_layer(i, f"{name}.bias"))

            q, k, v = (project(f"attention.self.{n}", x) for n in ("query", "key", "value"))
            context = np.empty_like(x)
            for h in range(heads):
                cols = slice(h * size, (h + 1) * size)
                scores = q[:, cols] @ k[:, cols].T / math.sqrt(size)
                scores = np.exp(scores - scores.max(axis=1, keepdims=True))
                context[:, cols] = (scores / scores.sum(axis=1, keepdims=True)) @ v[:, cols]
            x = norm(project("attention.output.dense", context) + x, _layer(i, "attention.output.LayerNorm"))
            inner = project("intermediate.dense", x)
            inner = inner * 0.5 * (1.0 + erf(inner / math.sqrt(2.0)).astype(np.float64))
            x = norm(project("output.dense", inner) + x, _layer(i, "output.LayerNorm"))
        pooling = encoder["pooling"]
        if pooling == "cls":
            vector = x[0]
        elif pooling == "max":
            vector = x.max(axis=0)
        elif pooling == "mean":
            vector = x.mean(axis=0)
        else:  # mean_sqrt_len_tokens
            vector = x.sum(axis=0) / math.sqrt(len(x))
        if encoder["normalize"]:
            vector = vector / np.linalg.norm(vector)
        vectors.append(vector)
    return np.asarray(vectors)
