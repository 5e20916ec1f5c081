"""int8 variants of the ONNX embedding graph against the fp32 graph: vector drift, retrieval
agreement, and encode speed against torch fp32, in one run.

Each variant starts from the exporter's own fp32 graph (`export_fp32_graph`) and is stored as
the exporter stores every graph (onnxruntime's EXTENDED optimisation): onnxruntime's dynamic
quantisation (`quantize_dynamic`, int8 MatMul weights, activations quantised per run) with some
MatMuls left in fp32 (`nodes_to_exclude`) or other quantiser options; a SmoothQuant-style
scaling first; or MatMulNBits (blockwise 8- or 4-bit weights) on some or all weight MatMuls.
Quantised graphs encode one text per run, as the onnx backend does with its int8 graph. The
MatMul names are those torch's exporter gives all-MiniLM-L6-v2 (the default model).

Screen (cheap, before any `fieldguide eval`):

* every chunk of each corpus and every question is encoded with the fp32 graph;
* the pool is the union, over the questions, of the fp32 top-POOL chunks of its own corpus;
  each variant encodes the pool and the questions;
* per variant: cosine to the fp32 vector (mean, minimum) over pool chunks and questions, and
  retrieval agreement within the pool: top-1 the same as fp32's, mean overlap of the top-5,
  and mean overlap of the top-10, over the questions of both corpora.

Speed: the first SPEED chunks of the first corpus (in corpus order), encoded by torch
(sentence-transformers, batches of the configured size, as ingest does), the fp32 ONNX graph
(batches, longest first) and every variant (one text per run), the order reversed every round;
CPU seconds of this process (user + system, `resource.getrusage`) and wall seconds, the best
of the rounds. The load average is printed with the figures.

    python benchmarks/bench_int8_variants.py --docs DOCS --questions Q.jsonl [--docs DOCS2 --questions Q2.jsonl]
        [--variants int8 ...] [--pool 10] [--max-chunks N] [--speed 400] [--rounds 2] [--no-screen] [--json OUT]

With --max-chunks N only the first N chunks of each corpus are screened (a quick look at many
variants); the speed texts are taken from the whole first corpus either way.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

LAYERS = 6  # all-MiniLM-L6-v2
# The six weight MatMuls of a BERT layer, as torch's exporter names them.
PARTS = {
    "q": "attention/self/query/MatMul",
    "k": "attention/self/key/MatMul",
    "v": "attention/self/value/MatMul",
    "attn_out": "attention/output/dense/MatMul",
    "ffn_in": "intermediate/dense/MatMul",
    "ffn_out": "output/dense/MatMul",
}


def node_names(parts, layers) -> list[str]:
    return [f"/inner/encoder/layer.{layer}/{PARTS[part]}" for layer in layers for part in parts]


ALL = range(LAYERS)
# name -> (options, description): quantize_dynamic keyword arguments, or `nbits` (MatMulNBits, on
# every weight MatMul or on `nbits_parts` with dynamic int8 on the rest), or `smooth` (alpha of a
# SmoothQuant-style scaling calibrated on the exporter's probe texts, then dynamic int8)
VARIANTS = {
    "int8": ({}, "every weight MatMul (the current int8)"),
    "x-ffn_out": ({"nodes_to_exclude": node_names(["ffn_out"], ALL)}, "FFN down projection fp32"),
    "x-attn_out": ({"nodes_to_exclude": node_names(["attn_out"], ALL)}, "attention output fp32"),
    "x-ffn_out-attn_out": ({"nodes_to_exclude": node_names(["ffn_out", "attn_out"], ALL)},
                           "FFN down and attention output fp32"),
    "x-first": ({"nodes_to_exclude": node_names(PARTS, [0])}, "layer 0 fp32"),
    "x-last": ({"nodes_to_exclude": node_names(PARTS, [LAYERS - 1])}, "last layer fp32"),
    "x-first-last": ({"nodes_to_exclude": node_names(PARTS, [0, LAYERS - 1])}, "first and last layer fp32"),
    "x-ffn_out-last": ({"nodes_to_exclude": node_names(["ffn_out"], ALL) + node_names(PARTS, [LAYERS - 1])},
                       "FFN down and last layer fp32"),
    "qkv-only": ({"nodes_to_exclude": node_names(["attn_out", "ffn_in", "ffn_out"], ALL)},
                 "only Q, K, V int8"),
    "ffn_in-only": ({"nodes_to_exclude": node_names(["q", "k", "v", "attn_out", "ffn_out"], ALL)},
                    "only the FFN up projection int8"),
    "smooth50": ({"smooth": 0.5}, "SmoothQuant alpha 0.5 on every weight MatMul, then every one int8"),
    "smooth70": ({"smooth": 0.7}, "SmoothQuant alpha 0.7, then every weight MatMul int8"),
    "smooth30": ({"smooth": 0.3}, "SmoothQuant alpha 0.3, then every weight MatMul int8"),
    **{f"only-{part}": ({"nodes_to_exclude": node_names([p for p in PARTS if p != part], ALL)},
                        f"only the {part} MatMuls int8") for part in PARTS},
    **{f"only-layer{layer}": ({"nodes_to_exclude": node_names(PARTS, [n for n in ALL if n != layer])},
                              f"only layer {layer} int8") for layer in ALL},
    "mix-nbits-ffn": ({"nbits": 8, "block_size": 128, "accuracy_level": 4, "nbits_parts": ["ffn_in", "ffn_out"]},
                      "FFN MatMulNBits 8-bit (blocks of 128, int8 compute), the rest dynamic int8"),
    "mix-nbits-ffn_out": ({"nbits": 8, "block_size": 128, "accuracy_level": 4, "nbits_parts": ["ffn_out"]},
                          "FFN down MatMulNBits 8-bit (blocks of 128, int8 compute), the rest dynamic int8"),
    "x-ffn": ({"nodes_to_exclude": node_names(["ffn_in", "ffn_out"], ALL)}, "FFN fp32, the rest int8"),
    "uint8-weights": ({"weight_type": "QUInt8"}, "every weight MatMul, uint8 weights"),
    "reduce-range": ({"reduce_range": True}, "every weight MatMul, 7-bit weights"),
    "per-tensor": ({"per_channel": False}, "every weight MatMul, one scale per tensor"),
    # weight-only blockwise quantisation of every weight MatMul (MatMulNBits); accuracy_level 4
    # computes in int8 with the activations quantised per token and block at run time, 1 in fp32
    **{f"nbits{bits}-b{block}-{'acc4' if level == 4 else 'fp32'}": (
        {"nbits": bits, "block_size": block, "accuracy_level": level},
        f"MatMulNBits {bits}-bit, blocks of {block}, {'int8' if level == 4 else 'fp32'} compute")
       for bits, block, level in ((8, 32, 4), (8, 64, 4), (8, 128, 4), (8, 256, 4), (4, 32, 4), (8, 32, 1))},
}


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def make_variant(prepared: Path, out: Path, options: dict, calibration: list[str] | None = None,
                 tokenizer_folder: Path | None = None) -> None:
    import logging
    import warnings

    options = dict(options)
    if "nbits" in options:
        nbits_parts = options.pop("nbits_parts", None)
        nbits = {key: options.pop(key) for key in ("nbits", "block_size", "accuracy_level")}
        if nbits_parts is None:
            make_nbits_variant(prepared, out, {**nbits, **options})
            return
        # MatMulNBits on `nbits_parts`, then dynamic int8 on the other weight MatMuls
        staged = out.with_name("nbits.onnx")
        make_nbits_variant(prepared, staged, {**nbits, "nodes_to_exclude": node_names(
            [part for part in PARTS if part not in nbits_parts], ALL)}, optimise=False)
        prepared = staged
    if "smooth" in options:
        smoothed = out.with_name("smoothed.onnx")
        smooth_graph(prepared, smoothed, options.pop("smooth"), options.pop("smooth_parts", None),
                     calibration, tokenizer_folder)
        prepared = smoothed

    from onnxruntime.quantization import QuantType, quantize_dynamic

    from fieldguide.onnx_export import _store_optimised

    import onnx

    present = {node.name for node in onnx.load(str(prepared)).graph.node}
    missing = [name for name in options.get("nodes_to_exclude", []) if name not in present]
    if missing:
        sys.exit(f"not in the graph: {missing}")
    kwargs = {"weight_type": QuantType.QInt8, "per_channel": True, "op_types_to_quantize": ["MatMul"]}
    for key, value in options.items():
        kwargs[key] = getattr(QuantType, value) if key == "weight_type" else value
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quantize_dynamic(str(prepared), str(out), **kwargs)
    finally:
        root.setLevel(level)
    _store_optimised(out)


def smooth_graph(prepared: Path, out: Path, alpha: float, parts, texts: list[str], tokenizer_folder: Path) -> None:
    """SmoothQuant-style migration of activation range into the weights: before each group of
    weight MatMuls reading one tensor X, a Mul by 1/s (one factor per input channel) and the
    weights' rows multiplied by s, s_j = max|X_j|^alpha / max|W_j|^(1 - alpha), max|X_j| taken
    over `texts` run through the fp32 graph one at a time. The fp32 function is unchanged."""
    import numpy as np
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper
    from tokenizers import Tokenizer

    model = onnx.load(str(prepared))
    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    wanted = None if parts is None else tuple(PARTS[part] for part in parts)
    groups: dict[str, list] = {}
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in weights and len(weights[node.input[1]].dims) == 2:
            if wanted is None or node.name.endswith(wanted):
                groups.setdefault(node.input[0], []).append(node)
    probe = onnx.load(str(prepared))
    existing = {o.name for o in probe.graph.output}
    for name in groups:
        if name not in existing:
            probe.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(tokenizer_folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=256)
    names = list(groups)
    input_names = [i.name for i in session.get_inputs()]
    peak = {name: None for name in names}
    for text in texts:
        encoded = tokenizer.encode(text)
        feed = {"input_ids": np.array([encoded.ids], dtype=np.int64),
                "attention_mask": np.array([encoded.attention_mask], dtype=np.int64),
                "token_type_ids": np.array([encoded.type_ids], dtype=np.int64)}
        values = session.run(names, {k: v for k, v in feed.items() if k in input_names})
        for name, value in zip(names, values):
            channel_max = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            peak[name] = channel_max if peak[name] is None else np.maximum(peak[name], channel_max)
    new_inits = []
    rename = {}
    for index, (name, nodes) in enumerate(groups.items()):
        w_max = np.max([np.abs(numpy_helper.to_array(weights[n.input[1]])).max(axis=1) for n in nodes], axis=0)
        factor = (np.maximum(peak[name], 1e-5) ** alpha / np.maximum(w_max, 1e-5) ** (1 - alpha)).astype(np.float32)
        factor = np.clip(factor, 1e-3, 1e3)
        for n in nodes:
            w = numpy_helper.to_array(weights[n.input[1]]).astype(np.float32) * factor[:, None]
            weights[n.input[1]].CopyFrom(numpy_helper.from_array(w, n.input[1]))
        inverse = f"smooth_inverse_{index}"
        new_inits.append(numpy_helper.from_array((1.0 / factor).astype(np.float32), inverse))
        rename[name] = (f"{name}_smoothed", inverse, [n.name for n in nodes])
    graph.initializer.extend(new_inits)
    nodes_out = []
    for node in graph.node:
        nodes_out.append(node)
        for name, (smoothed, inverse, consumers) in rename.items():
            if node.name in consumers:
                node.input[0] = smoothed
    # the Mul nodes go right after the producer of X (or first, for a graph input)
    produced_at = {}
    for position, node in enumerate(nodes_out):
        for output in node.output:
            produced_at[output] = position
    inserts = sorted(((produced_at.get(name, -1), helper.make_node("Mul", [name, inverse], [smoothed],
                                                                  name=f"{smoothed}_mul"))
                      for name, (smoothed, inverse, _) in rename.items()), key=lambda item: -item[0])
    for position, mul in inserts:
        nodes_out.insert(position + 1, mul)
    del graph.node[:]
    graph.node.extend(nodes_out)
    onnx.save(model, str(out))


def blockwise_matmuls(source: Path, out: Path, select, block_size: int, bits: int = 8,
                      accuracy_level: int = 4) -> int:
    """Replace each MatMul of `source` whose weight is a 2-D initializer of shape (K, N) with
    select(node, K, N) true by onnxruntime's MatMulNBits contrib op: the weight quantised symmetrically
    in blocks of `block_size` along K (one scale per block and output column). Returns how many
    were replaced."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    from onnxruntime.capi._pybind_state import quantize_matmul_4bits, quantize_matmul_8bits

    model = onnx.load(str(source))
    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    nodes, replaced = [], 0
    for node in graph.node:
        weight = weights.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if weight is None or len(weight.dims) != 2 or not select(node, *weight.dims):
            nodes.append(node)
            continue
        b = np.ascontiguousarray(numpy_helper.to_array(weight).astype(np.float32))
        rows, cols = b.shape  # K, N
        blocks = -(-rows // block_size)
        per_byte = 8 // bits
        if blocks * block_size != rows:
            b = np.ascontiguousarray(np.pad(b, ((0, blocks * block_size - rows), (0, 0))))
        packed = np.zeros((cols, blocks, -(-block_size // per_byte)), dtype=np.uint8)
        scales = np.zeros((cols, blocks), dtype=np.float32)
        zero_points = np.zeros((cols, -(-blocks // per_byte)), dtype=np.uint8)  # unused: symmetric
        (quantize_matmul_8bits if bits == 8 else quantize_matmul_4bits)(
            packed, b, scales, zero_points, block_size, cols, rows, True)
        names = (f"{weight.name}_q{bits}", f"{weight.name}_scales")
        graph.initializer.extend([numpy_helper.from_array(packed, names[0]), numpy_helper.from_array(scales, names[1])])
        nodes.append(helper.make_node("MatMulNBits", [node.input[0], *names], list(node.output),
                                      name=f"{node.name}_q{bits}", domain="com.microsoft", K=rows, N=cols,
                                      bits=bits, block_size=block_size, accuracy_level=accuracy_level))
        replaced += 1
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input}
    kept = [init for init in graph.initializer if init.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(out))
    return replaced


def make_nbits_variant(prepared: Path, out: Path, options: dict, optimise: bool = True) -> None:
    """Every weight MatMul not excluded becomes MatMulNBits (`blockwise_matmuls`)."""
    from fieldguide.onnx_export import _store_optimised

    excluded = set(options.get("nodes_to_exclude", []))
    blockwise_matmuls(prepared, out, lambda node, k, n: node.name not in excluded, block_size=options["block_size"],
                      bits=options["nbits"], accuracy_level=options["accuracy_level"])
    if optimise:
        _store_optimised(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=Path, action="append", required=True)
    parser.add_argument("--questions", type=Path, action="append", required=True)
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--pool", type=int, default=10)
    parser.add_argument("--max-chunks", type=int, default=0,
                        help="screen only the first N chunks of each corpus (a quick look; 0: all)")
    parser.add_argument("--speed", type=int, default=400, help="chunk texts timed (0: no speed figures)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-screen", action="store_true", help="speed figures only")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if len(args.docs) != len(args.questions):
        parser.error("give one --questions per --docs")

    import numpy as np
    from onnxruntime.quantization.shape_inference import quant_pre_process
    from sentence_transformers import SentenceTransformer

    from fieldguide.embedding import embedding_model_id, embedding_model_path
    from fieldguide.onnx_embeddings import ENCODER_CONFIG, MODEL_FILE, TOKENIZER_FILE, OnnxEncoder
    from fieldguide.onnx_export import _encoder_config, _store_optimised, export_fp32_graph
    from fieldguide.settings import Settings
    from ingest.chunker import Chunker, iter_markdown_files

    settings = Settings()
    chunker = Chunker(settings)
    corpora = []
    for docs, questions in zip(args.docs, args.questions):
        chunks = [c.embed_text for path in iter_markdown_files(docs) for c in chunker.chunk_path(path, docs).chunks]
        asked = [json.loads(line)["question"] for line in questions.read_text(encoding="utf-8").splitlines()
                 if line.strip()]
        corpora.append({"name": docs.parent.name or docs.name, "all_chunks": chunks,
                        "chunks": chunks[:args.max_chunks] if args.max_chunks else chunks, "questions": asked})
    report = {"load_start": os.getloadavg(), "corpora": {c["name"]: [len(c["chunks"]), len(c["questions"])]
                                                        for c in corpora}, "variants": {}}
    print(f"corpora {report['corpora']}, load {os.getloadavg()}", flush=True)

    model = SentenceTransformer(embedding_model_path(settings), device="cpu")
    model_id = embedding_model_id(settings)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        config = _encoder_config(model, model_id, "none")
        fp32_dir = tmp / "none"
        fp32_dir.mkdir()
        raw = tmp / "raw.onnx"
        export_fp32_graph(model[0], model_id, config["input_names"], raw)
        model[0].tokenizer.backend_tokenizer.save(str(fp32_dir / TOKENIZER_FILE))
        (fp32_dir / ENCODER_CONFIG).write_text(json.dumps(config))
        (fp32_dir / MODEL_FILE).write_bytes(raw.read_bytes())
        _store_optimised(fp32_dir / MODEL_FILE)
        prepared = tmp / "prepared.onnx"
        quant_pre_process(str(raw), str(prepared), skip_symbolic_shape=True)
        encoders = {"none": OnnxEncoder(fp32_dir)}
        from fieldguide.onnx_export import PROBE_TEXTS
        calibration = list(PROBE_TEXTS)
        for name in args.variants:
            folder = tmp / name
            folder.mkdir()
            (folder / TOKENIZER_FILE).write_bytes((fp32_dir / TOKENIZER_FILE).read_bytes())
            (folder / ENCODER_CONFIG).write_text(json.dumps({**config, "quantization": "int8"}))
            make_variant(prepared, folder / MODEL_FILE, VARIANTS[name][0], calibration, fp32_dir)
            encoders[name] = OnnxEncoder(folder)
            assert encoders[name].one_text_per_run

        if not args.no_screen:
            batch = int(settings.embedding_batch_size)
            for corpus in corpora:
                started = time.perf_counter()
                corpus["ref_chunks"] = encoders["none"].encode(corpus["chunks"], batch)
                corpus["ref_q"] = encoders["none"].encode(corpus["questions"], batch)
                scores = corpus["ref_q"] @ corpus["ref_chunks"].T
                pool = sorted({int(i) for row in scores for i in np.argsort(-row)[:args.pool]})
                corpus["pool"] = pool
                print(f"{corpus['name']}: fp32 reference in {time.perf_counter() - started:.0f}s, "
                      f"pool {len(pool)} chunks", flush=True)
            for name in args.variants:
                started = time.perf_counter()
                cos_c, cos_q, top1, top5, top10 = [], [], [], [], []
                for corpus in corpora:
                    ref_pool = corpus["ref_chunks"][corpus["pool"]]
                    vec_pool = encoders[name].encode([corpus["chunks"][i] for i in corpus["pool"]])
                    vec_q = encoders[name].encode(corpus["questions"])
                    cos_c.extend((ref_pool * vec_pool).sum(axis=1))
                    cos_q.extend((corpus["ref_q"] * vec_q).sum(axis=1))
                    ref_rank = np.argsort(-(corpus["ref_q"] @ ref_pool.T), axis=1)
                    var_rank = np.argsort(-(vec_q @ vec_pool.T), axis=1)
                    for a, b in zip(ref_rank, var_rank):
                        top1.append(a[0] == b[0])
                        top5.append(len(set(a[:5]) & set(b[:5])) / 5)
                        top10.append(len(set(a[:10]) & set(b[:10])) / 10)
                row = {"chunk_cos_mean": float(np.mean(cos_c)), "chunk_cos_min": float(np.min(cos_c)),
                       "q_cos_mean": float(np.mean(cos_q)), "q_cos_min": float(np.min(cos_q)),
                       "top1_same": float(np.mean(top1)), "top5_overlap": float(np.mean(top5)),
                       "top10_overlap": float(np.mean(top10))}
                report["variants"][name] = row
                print(f"{name:20s} " + " ".join(f"{k} {v:.4f}" for k, v in row.items())
                      + f"  ({time.perf_counter() - started:.0f}s, load {os.getloadavg()[0]:.2f})", flush=True)

        if args.speed:
            texts = corpora[0]["all_chunks"][:args.speed]
            batch = int(settings.embedding_batch_size)
            runners = {"torch": lambda: model.encode(texts, batch_size=batch, normalize_embeddings=True)}
            for name, encoder in encoders.items():
                runners[name] = (lambda e=encoder: e.encode(texts, batch))
            best: dict[str, tuple[float, float]] = {}
            for round_index in range(args.rounds):
                order = list(runners) if round_index % 2 == 0 else list(reversed(runners))
                for name in order:
                    cpu, wall = cpu_seconds(), time.perf_counter()
                    runners[name]()
                    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
                    prior = best.get(name, (float("inf"), float("inf")))
                    best[name] = (min(prior[0], cpu), min(prior[1], wall))
                    print(f"  round {round_index + 1} {name:20s} cpu {cpu:6.2f}s wall {wall:6.2f}s "
                          f"load {os.getloadavg()[0]:.2f}", flush=True)
            torch_cpu, torch_wall = best["torch"]
            report["speed"] = {"texts": len(texts), "load_end": os.getloadavg(), "best": {
                name: {"cpu": cpu, "wall": wall, "cpu_speedup": torch_cpu / cpu, "wall_speedup": torch_wall / wall}
                for name, (cpu, wall) in best.items()}}
            print(f"speed, {len(texts)} chunk texts, best of {args.rounds}; load {os.getloadavg()}")
            for name, row in report["speed"]["best"].items():
                print(f"  {name:20s} cpu {row['cpu']:6.2f}s ({row['cpu_speedup']:.2f}x torch)  "
                      f"wall {row['wall']:6.2f}s ({row['wall_speedup']:.2f}x torch)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
