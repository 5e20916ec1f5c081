"""Which arithmetic encodes fastest on this machine: the same texts through every runtime, in one process.

The embedding model's fp32 ONNX export through OpenVINO in bf16 and in fp32 arithmetic and
through onnxruntime (fp32), its int8 export through onnxruntime, and sentence-transformers on
torch (fp32): each encodes the same `--texts` chunks of the corpus (a fixed random draw of
their `embed_text`), in batches of the configured size, `--rounds` times, the order of the
runtimes reversed every other round. Prints the best time of each, its texts per second and
its speed relative to torch, then the probe `OpenVinoModel` times before choosing between bf16
and fp32 on a machine (`fieldguide.onnx_embeddings.probe_ms`), and the choice it keeps.

bf16 is not faster on every CPU that lists bf16 instructions: this script is how to see it.
torch is timed only where the `torch` extra is installed.

With `--exports LABEL=DIR ...` it compares export folders instead (an export made by an earlier
version of the exporter against the current one, say): each fp32 export through the default
runtime (OpenVINO, in the precision it keeps on this machine) and through onnxruntime, the same
texts in the same rounds, and how close each export's vectors are to the first's (cosine per
text, lowest and mean; largest coordinate difference).

    python benchmarks/bench_runtimes.py DOCS_DIR [--texts 400] [--rounds 2] [--exports old=DIR new=DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs_dir", type=Path)
    parser.add_argument("--texts", type=int, default=400, metavar="N")
    parser.add_argument("--rounds", type=int, default=2, metavar="N")
    parser.add_argument("--exports", nargs="+", metavar="LABEL=DIR", default=[],
                        help="fp32 export folders to compare (the first is the one the others are compared with)")
    args = parser.parse_args()
    exports = {}
    for item in args.exports:
        label, _, folder = item.partition("=")
        if not folder or not (Path(folder) / "encoder.json").is_file():
            parser.error(f"--exports {item!r}: expected LABEL=DIR with DIR an export folder (encoder.json)")
        exports[label] = Path(folder)

    from fieldguide.embedding import embedding_model_id, embedding_model_path, model_cache_dir
    from fieldguide.onnx_embeddings import (PRECISIONS, OnnxEmbeddings, OpenVinoModel, faster_precision,
                                            machine_key, openvino_bf16, probe_ms)
    from fieldguide.onnx_export import ensure_export
    from fieldguide.settings import Settings
    from ingest.chunker import Chunker, iter_markdown_files

    settings = Settings()
    texts = [c.embed_text for path in iter_markdown_files(args.docs_dir)
             for c in Chunker(settings).chunk_path(path, args.docs_dir).chunks]
    random.Random(1).shuffle(texts)
    texts = texts[:args.texts]
    batch = int(settings.embedding_batch_size)
    encoders = {}
    capable = openvino_bf16()
    torch_model = None
    if exports:
        for label, folder in exports.items():
            default = OnnxEmbeddings(folder, batch_size=batch, runtime="openvino")
            encoders[f"openvino {default.encoder.precision} {label}"] = default
            encoders[f"onnxruntime fp32 {label}"] = OnnxEmbeddings(folder, batch_size=batch, runtime="onnxruntime")
    else:
        cache, model_id, path = model_cache_dir(settings), embedding_model_id(settings), embedding_model_path(settings)
        fp32 = ensure_export(cache, model_id, path, "none")
        int8 = ensure_export(cache, model_id, path, "int8")
        for precision in (PRECISIONS if capable else ("fp32",)):
            embeddings = OnnxEmbeddings(fp32, batch_size=batch, runtime="onnxruntime")  # a tokenizer and pooling
            embeddings.encoder.model = OpenVinoModel(fp32 / "model.onnx", precision=precision)
            encoders[f"openvino {precision}"] = embeddings
        encoders["onnxruntime fp32"] = OnnxEmbeddings(fp32, batch_size=batch, runtime="onnxruntime")
        encoders["onnxruntime int8"] = OnnxEmbeddings(int8, batch_size=batch, runtime="onnxruntime")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:  # the `torch` extra is not installed
            SentenceTransformer = None
        if SentenceTransformer is not None:
            torch_model = SentenceTransformer(path, device="cpu")

            class Torch:
                def embed_documents(self, items):
                    return torch_model.encode(items, batch_size=batch, normalize_embeddings=True)

            encoders["torch fp32"] = Torch()
    for encoder in encoders.values():
        encoder.embed_documents(texts[:batch])  # warm up: kernels, first-run allocations

    seconds: dict[str, list[float]] = {name: [] for name in encoders}
    for round_number in range(args.rounds):
        names = list(encoders) if round_number % 2 == 0 else list(encoders)[::-1]
        for name in names:
            started = time.perf_counter()
            encoders[name].embed_documents(texts)
            seconds[name].append(time.perf_counter() - started)

    torch_best = min(seconds["torch fp32"]) if "torch fp32" in seconds else None
    report = {
        "machine": machine_key(), "cpus": os.cpu_count(), "texts": len(texts), "batch_size": batch,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "encode": {name: {"seconds": [round(s, 2) for s in runs], "texts_per_s": round(len(texts) / min(runs), 1),
                          **({"vs_torch": round(torch_best / min(runs), 2)} if torch_best else {})}
                   for name, runs in seconds.items()},
    }
    if exports:
        report["exports"] = {label: str(folder) for label, folder in exports.items()}
        report["agreement"] = _agreement(encoders, exports, texts)
        capable = False  # the probe below is about one export's two precisions
    if capable:
        measured = {name: round(probe_ms(encoders[f"openvino {name}"].encoder.model.compiled), 2)
                    for name in PRECISIONS}
        report["probe_ms"] = measured
        report["openvino_keeps"] = faster_precision(measured)
    print(json.dumps(report, indent=2))
    return 0


def _agreement(encoders: dict, exports: dict, texts: list[str]) -> dict:
    """Each export's vectors against the first export's, through the same runtime."""
    import numpy as np

    first = next(iter(exports))
    vectors = {name: np.asarray(encoder.embed_documents(texts)) for name, encoder in encoders.items()}
    found = {}
    for name, got in vectors.items():
        runtime, _, label = name.rpartition(" ")
        if label == first:
            continue
        base = vectors[next(n for n in vectors if n.startswith(runtime.split()[0]) and n.endswith(" " + first))]
        cosine = (got * base).sum(axis=1) / np.linalg.norm(got, axis=1) / np.linalg.norm(base, axis=1)
        found[f"{name} vs {first}"] = {"cosine_min": round(float(cosine.min()), 7),
                                       "cosine_mean": round(float(cosine.mean()), 8),
                                       "max_abs_diff": float(np.abs(got - base).max())}
    return found


if __name__ == "__main__":
    sys.exit(main())
