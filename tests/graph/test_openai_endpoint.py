"""The `openai` provider end to end against a real OpenAI-compatible server: llama-cpp-python's
own server serving the packaged GGUF on loopback. Tokens stream through the endpoint, the answer
is cited and checked, and a follow-up is condensed by the endpoint's model (or, when its rewrite
is not one question, by the rules)."""
import asyncio

import pytest
from langgraph.checkpoint.memory import MemorySaver

from fieldguide.retrieval import open_resources, stream_answer
from graph.graph import build_graph
from test_end_to_end import DOCS

pytestmark = [pytest.mark.weaviate, pytest.mark.models]


@pytest.fixture
def endpoint_corpus(tmp_path, weaviate_settings, llama_server):
    from ingest.pipeline import ingest_folder

    docs = tmp_path / "docs"
    for name, text in DOCS.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    ingest_folder(docs, weaviate_settings, progress=False)
    return weaviate_settings.model_copy(update={
        "chat_provider": "openai", "openai_base_url": llama_server["base_url"], "chat_model": llama_server["model"],
        "openai_api_key": "not-needed", "max_answer_tokens": 48})


def test_the_openai_provider_streams_cited_checked_answers_and_condenses_a_follow_up(endpoint_corpus):
    async def conversation():
        turns = []
        with open_resources(endpoint_corpus) as resources:
            graph = build_graph(MemorySaver())
            for question, overrides in (("Where is the export button?", {"verify": "off"}),
                                        ("And what does clicking it download?", {})):
                tokens, final = [], {}
                async for kind, payload in stream_answer(graph, question, resources, overrides, "endpoint-1"):
                    if kind == "token":
                        tokens.append(payload)
                    else:
                        final = payload
                turns.append((tokens, final))
        return turns

    (tokens, first), (follow_tokens, second) = asyncio.run(conversation())
    # Turn 1, unchecked: the evidence, then the endpoint's tokens one by one.
    assert tokens[0].startswith("> ") and "Export" in tokens[0]
    assert len(tokens) > 3 and "".join(tokens).strip() == first["answer"]
    generated = [s for s in first["sentences"] if s["origin"] == "generated"]
    assert generated and all(0.0 <= s["support"] <= 1.0 and s["kept"] for s in generated)
    numbers = {c["n"] for c in first["citations"]}
    assert numbers and numbers <= set(range(1, len(first["context"]) + 1))
    assert all(c["url"].startswith("/docs-assets/screens/export.md#L") for c in first["citations"]
               if c["source"] == "screens/export.md")
    # Turn 2, the endpoint's defaults (verify=drop, min_support 0.6): condensed before retrieval, and
    # of the model's sentences only supported ones reach the reader.
    assert second["condensed_by"] in ("model", "rules")
    assert second["standalone_question"] != "And what does clicking it download?"
    assert second["abstain"] is False and second["context"]
    generated = [s for s in second["sentences"] if s["origin"] == "generated"]
    for sentence in generated:
        assert sentence["kept"] == (not sentence.get("reason")) and not sentence.get("flagged", False)
        if sentence["kept"]:
            assert sentence["support"] >= 0.6 and sentence["text"] in second["answer"]
    assert "".join(follow_tokens).strip() == second["answer"]


def test_the_coverage_judge_asks_the_endpoint_as_one_more_input(endpoint_corpus):
    """With `coverage_judge` the endpoint's model is asked whether the context answers the question
    (prompts/coverage.md) and its reading is combined with the offline verdict; without it, it is
    never asked. Whether a small model reads well cannot be measured here: only that its reply is
    asked for, read and combined by the rule."""
    from nodes.coverage import Signals, verdict, with_judgement

    async def run(thread, overrides):
        with open_resources(endpoint_corpus) as resources:
            graph = build_graph(MemorySaver())
            async for _ in stream_answer(graph, "Where is the export button?", resources, overrides, thread):
                pass
            return graph.get_state({"configurable": {"thread_id": thread}}).values

    judged = asyncio.run(run("judge-on", {"coverage_judge": True, "verify": "off"}))
    signals = dict(judged["coverage_signals"])
    assert signals["judge"] in ("yes", "no", "unclear")
    offline = verdict(Signals(**{**signals, "judge": None}))
    assert (judged["coverage"], judged["coverage_reason"]) == with_judgement(*offline, Signals(**signals))
    assert judged["abstain"] is False and judged["answer"]

    unjudged = asyncio.run(run("judge-off", {"verify": "off"}))
    assert unjudged["coverage_signals"]["judge"] is None  # off by default
