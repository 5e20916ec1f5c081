"""The packaged model's export against sentence-transformers' own vectors, kept in golden/minilm.json
(written by golden/generate.py with the `torch` extra): the export made without torch must give
the same vectors, whichever runtime runs it."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fieldguide.settings import Settings

pytestmark = pytest.mark.models

GOLDEN = Path(__file__).resolve().parent / "golden" / "minilm.json"
# short and long (past the 256-token maximum, so truncated), a two-letter one, blanks around,
# accents and CJK, a table, a word the vocabulary lacks; encoded in one batch, so padded
GOLDEN_TEXTS = (
    "How do I change the currency of a budget?",
    "Settings > Display: choose the date format and the first day of the week.",
    "| Column | Meaning |\n| --- | --- |\n| Cleared | the bank has confirmed the amount |",
    "A rule runs on every imported transaction and can rename the payee or set its category.",
    " ".join(["Scheduled payments are posted automatically on their date, and each posted "
              "occurrence can still be edited like any other transaction."] * 10),
    "ok",
    "  Überweisungen, Kategorien und Konten: è à ü — 予算  ",
    "Reconcile with OFX/QFX imports (zzyzx-unknownword)",
)
MIN_COSINE = 0.9999


def golden() -> tuple[list[str], np.ndarray]:
    data = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return data["texts"], np.asarray(data["vectors"], dtype=np.float64)


def test_the_golden_file_is_small_and_holds_these_texts():
    texts, vectors = golden()
    assert tuple(texts) == GOLDEN_TEXTS, "texts changed: run tests/embedding/golden/generate.py"
    assert vectors.shape == (len(GOLDEN_TEXTS), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert GOLDEN.stat().st_size < 40_000


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_the_export_reproduces_sentence_transformers_vectors(runtime):
    from fieldguide.embedding import load_embeddings

    texts, expected = golden()
    embeddings = load_embeddings(Settings(embedding_backend="onnx", embedding_quantization="none",
                                          embedding_runtime=runtime))
    config = json.loads((embeddings.folder / "encoder.json").read_text())
    assert config["exporter"] == "bert-onnx-helper"  # the torch-free graph, not torch.onnx.export's
    got = np.asarray(embeddings.encoder.encode(list(texts), batch_size=len(texts)), dtype=np.float64)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    cosines = (got * expected).sum(axis=1)
    assert cosines.min() >= MIN_COSINE, dict(zip(texts, cosines.round(6)))
