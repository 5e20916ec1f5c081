"""Docs in another language (Russian pages written for this test): chunking, retrieval, routing
and abstention, end to end through the real store, embedding model and retrieval graph.

With the default English embedding model the vectors carry little of Russian meaning, so what
keeps retrieval sensible is the lexical part of the scorer, which reads Cyrillic words (its old
`[a-z0-9]+` rule dropped them all). The wording cues are English and stay silent; the intent
then comes from the candidates' kinds (the screen pages say so in their front matter, since
the screen heuristics read English UI words), and abstention from the candidates' own spread.
"""
from __future__ import annotations

from pathlib import Path

import pytest

DOCS = Path(__file__).parent / "data" / "ru"
SCREEN_QUESTION = "Где находится кнопка экспорта отчёта?"
CONCEPTUAL_QUESTION = "Почему неизрасходованный остаток категории переносится на следующий месяц?"
OFF_TOPIC_QUESTION = "Как испечь хлеб на закваске дома?"


def test_chunks_keep_every_cyrillic_line():
    from ingest.chunker import Chunker
    from ingest.settings import ChunkingSettings

    chunker = Chunker(ChunkingSettings())
    for path in sorted(DOCS.glob("*.md")):
        chunks = chunker.chunk_path(path, DOCS).chunks
        body = path.read_text(encoding="utf-8").split("---\n", 2)[2]
        kept = "\n".join(c.text for c in chunks)
        assert all(line in kept for line in body.split("\n") if line.strip())
        assert all(any("\u0400" <= ch <= "\u04ff" for ch in c.embed_text) for c in chunks)


@pytest.fixture(scope="module")
def russian_results(weaviate_service, tmp_path_factory):
    import uuid

    from fieldguide.embedding import load_embeddings
    from fieldguide.retrieval import open_resources, retrieve
    from fieldguide.settings import Settings
    from fieldguide.store import open_store
    from graph.graph import build_retrieval_graph
    from ingest.pipeline import ingest_folder

    settings = Settings(weaviate_url=weaviate_service["url"], weaviate_grpc_port=weaviate_service["grpc_port"],
                        collection="Ru" + uuid.uuid4().hex[:12], data_dir=tmp_path_factory.mktemp("data"))
    try:
        summary = ingest_folder(DOCS, settings, embeddings=load_embeddings(settings), progress=False,
                                log=lambda message: None)
        graph = build_retrieval_graph()
        with open_resources(settings) as resources:
            states = {q: retrieve(graph, q, resources)[0]
                      for q in (SCREEN_QUESTION, CONCEPTUAL_QUESTION, OFF_TOPIC_QUESTION)}
    finally:
        with open_store(settings) as store:
            store.drop()
    return summary, states


@pytest.mark.weaviate
@pytest.mark.models
def test_retrieval_finds_the_page_that_holds_the_words(russian_results):
    _, states = russian_results
    assert states[SCREEN_QUESTION]["context"][0]["source"] == "export.md"
    assert states[CONCEPTUAL_QUESTION]["context"][0]["source"] == "rollover.md"


@pytest.mark.weaviate
@pytest.mark.models
def test_routing_follows_the_evidence_not_a_default(russian_results):
    _, states = russian_results
    screen, conceptual = states[SCREEN_QUESTION], states[CONCEPTUAL_QUESTION]
    assert screen["intent_wording"] == 0.0 and conceptual["intent_wording"] == 0.0  # no English cue fires
    assert screen["intent"] == "screen" and conceptual["intent"] == "conceptual"
    assert "candidates" in screen["intent_reason"]
    # the English model reads Cyrillic letter by letter: its example vectors are not evidence here
    assert "examples +0.00 (not counted" in screen["intent_reason"]


@pytest.mark.weaviate
@pytest.mark.models
def test_abstains_on_what_the_pages_do_not_cover(russian_results):
    summary, states = russian_results
    assert summary.calibration["chunks"] == summary.chunks_written
    assert states[OFF_TOPIC_QUESTION]["abstain"] is True and states[OFF_TOPIC_QUESTION]["abstain_reason"]
    assert not states[SCREEN_QUESTION]["abstain"] and not states[CONCEPTUAL_QUESTION]["abstain"]


