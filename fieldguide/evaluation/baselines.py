"""The two naive RAG baselines a user would otherwise build, on the same files and model.

* `naive`   - RecursiveCharacterTextSplitter (1000 characters, 200 overlap) on each raw file;
* `headers` - MarkdownHeaderTextSplitter (`#` to `####`, headings kept in the text), then the
              same recursive splitter on each section.

Both embed their chunks with fieldguide's own embedding model (normalised vectors) and
answer a question with the top 4 chunks by cosine similarity, computed in numpy: no store,
no threshold, no rerank. Their result lines follow the retrieval contract, so the same
metrics score them side by side with the pipeline.
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

BASELINES = ("naive", "headers")
TOP_K = 4
CHUNK_SIZE, CHUNK_OVERLAP = 1000, 200
HEADER_LEVELS = [("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")]


def split_corpus(docs_dir: Path, mode: str) -> list[dict]:
    """Chunks of every `*.md` file under `docs_dir` (sorted), as the baseline `mode` cuts them."""
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

    if mode not in BASELINES:
        raise ValueError(f"unknown baseline {mode!r}")
    recursive = RecursiveCharacterTextSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP)
    by_headers = MarkdownHeaderTextSplitter(headers_to_split_on=HEADER_LEVELS, strip_headers=False)
    chunks: list[dict] = []
    for path in sorted(Path(docs_dir).rglob("*.md")):
        source = path.relative_to(docs_dir).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        if mode == "naive":
            pieces = [(piece, []) for piece in recursive.split_text(text)]
        else:
            pieces = []
            for section in by_headers.split_text(text):
                trail = [section.metadata[key] for _, key in HEADER_LEVELS if key in section.metadata]
                pieces.extend((piece, trail) for piece in recursive.split_text(section.page_content))
        chunks.extend({"chunk_id": f"{source}#{n}", "text": piece, "source": source, "heading_path": trail}
                      for n, (piece, trail) in enumerate(pieces))
    return chunks


class BaselineIndex:
    """One baseline's chunks and their vectors (rows normalised, so a dot product is the cosine)."""

    def __init__(self, mode: str, docs_dir: Path, embeddings, cache_dir: Path | None = None, model_id: str = ""):
        import numpy as np

        self.mode = mode
        self.embeddings = embeddings
        self.chunks = split_corpus(docs_dir, mode)
        started = time.perf_counter()
        # The same texts and model give the same vectors: a re-run loads them instead of embedding again.
        key = hashlib.sha256("\0".join([model_id, *(c["text"] for c in self.chunks)]).encode()).hexdigest()[:16]
        cached = cache_dir / f"{mode}-{key}.npy" if cache_dir else None
        self.from_cache = bool(cached and cached.is_file())
        if self.from_cache:
            self.vectors = np.load(cached)
        else:
            vectors = embeddings.embed_documents([c["text"] for c in self.chunks]) if self.chunks else []
            self.vectors = np.asarray(vectors, dtype=np.float32).reshape(len(self.chunks), -1)
            if cached:
                cached.parent.mkdir(parents=True, exist_ok=True)
                np.save(cached, self.vectors)
        self.embed_seconds = time.perf_counter() - started

    def result_line(self, question_id: str, question: str, k: int = TOP_K) -> dict:
        import numpy as np

        started = time.perf_counter()
        query = np.asarray(self.embeddings.embed_query(question), dtype=np.float32)
        similarities = self.vectors @ query if len(self.chunks) else np.zeros(0)
        top = np.argsort(-similarities, kind="stable")[:k]
        context = [dict(self.chunks[i], similarity=round(float(similarities[i]), 4)) for i in top]
        total_ms = (time.perf_counter() - started) * 1000.0
        return {"id": question_id, "intent": None, "abstain": False, "context": context,
                "timings_ms": {"total": round(total_ms, 3)}}


def run_baseline(mode: str, docs_dir: Path, questions: list[dict], embeddings, cache_dir: Path | None = None,
                 model_id: str = "") -> tuple[list[dict], dict]:
    """(result lines, facts about the run: chunk count, embedding seconds, whether vectors came from the cache)."""
    index = BaselineIndex(mode, docs_dir, embeddings, cache_dir, model_id)
    lines = [index.result_line(q["id"], q["question"]) for q in questions]
    return lines, {"chunks": len(index.chunks), "embed_seconds": round(index.embed_seconds, 2),
                   "vectors_cached": index.from_cache}
