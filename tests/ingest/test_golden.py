"""Golden chunk files: hand-written documents, their chunks pinned byte for byte.

Regenerate after an intended change with `FIELDGUIDE_UPDATE_GOLDEN=1 pytest tests/ingest`,
then read the diff: it is the behaviour change.
"""
import json
import os
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
GOLDEN = Path(__file__).parent / "golden"
DOCS = sorted(p.name for p in DATA.iterdir() if p.suffix in (".md", ".mdx"))


def render(chunks) -> str:
    lines = []
    for chunk in chunks:
        record = chunk.to_record()
        record["content_kind_reason"] = chunk.content_kind_reason
        lines.append(json.dumps(record, ensure_ascii=False, indent=1))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name", DOCS)
def test_chunks_match_golden(chunker, name):
    chunked = chunker.chunk_path(DATA / name, DATA)
    actual = render(chunked.chunks)
    golden = GOLDEN / (name + ".json")
    if os.environ.get("FIELDGUIDE_UPDATE_GOLDEN"):
        golden.write_text(actual, encoding="utf-8")
    assert golden.exists(), f"no golden file for {name}: run with FIELDGUIDE_UPDATE_GOLDEN=1"
    assert actual == golden.read_text(encoding="utf-8")
