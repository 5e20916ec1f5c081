import asyncio

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import MemorySaver

from fakes import config_for, make_resources, record, split_section
from fieldguide.retrieval import result_line, stream_answer
from graph.graph import build_graph, build_retrieval_graph, graph

RECORDS = [
    record("export-screen", "Press the Export button in the toolbar of the Reports screen to export invoices.",
           heading_path=("Reports screen", "Export button"), content_kind="screen", source="screens/reports.md",
           images=["/img/reports.png"]),
    *split_section("rollover", ["Monthly rollover moves unspent money to the next month.",
                                "Overspent money is taken from next month's budget when the month rolls over."],
                   heading_path=("Budget", "Monthly rollover"), source="concepts/budget.md"),
    record("team", "Invite members by email.", heading_path=("Team",), source="team.md"),
]


class ExplodingChat(GenericFakeChatModel):
    async def _astream(self, *args, **kwargs):
        raise AssertionError("the model must not be called")
        yield  # pragma: no cover


def fake_chat(*answers):
    return GenericFakeChatModel(messages=iter([AIMessage(a) for a in answers]))


def test_module_graph_has_every_node_and_a_narrow_input():
    assert set(graph.get_graph().nodes) >= {"condense", "route", "embed", "search", "threshold", "rerank",
                                           "weigh_intent", "cap", "reassemble", "evidence", "coverage", "prompt",
                                           "generate"}
    # the verdict is decided once the quotes are known and before the prompt is built
    edges = {(e.source, e.target) for e in graph.get_graph().edges}
    assert ("evidence", "coverage") in edges and ("coverage", "prompt") in edges
    assert set(graph.get_input_jsonschema()["properties"]) == {"question", "conversation_id", "messages"}


def test_whole_graph_answers_with_a_fake_model_and_records_every_stage():
    resources = make_resources(RECORDS, chat_model=fake_chat("Open Reports and press Export."))
    state = asyncio.run(build_graph().ainvoke(
        {"question": "Where is the export button on the reports screen?"},
        config_for(resources, min_similarity=0.1, rerank_min=0.0, max_chunks=2, verify="off")))
    assert state["intent"] == "screen" and state["abstain"] is False
    quote = "> Press the Export button in the toolbar of the Reports screen to export invoices. [1]"
    assert state["answer"] == quote + "\n\nOpen Reports and press Export."
    assert state["context"][0]["chunk_id"] == "export-screen"
    assert state["citations"][0]["n"] == 1 and state["citations"][0]["chunk_id"] == "export-screen"
    assert set(state["stages"]) == {"search", "threshold", "rerank", "cap"}
    assert set(state["timings_ms"]) == {"condense", "route", "embed", "search", "threshold", "rerank",
                                        "weigh_intent", "cap", "reassemble", "evidence", "coverage", "prompt",
                                        "generate"}
    assert state["coverage"] == "covered" and state["coverage_reason"]


def test_tokens_stream_from_the_generate_node():
    resources = make_resources(RECORDS, chat_model=fake_chat("Overspending comes out of next month."))

    async def collect():
        tokens, final = [], None
        async for kind, payload in stream_answer(build_graph(), "Why is overspent money taken from next month?",
                                                 resources, {"min_similarity": 0.1, "verify": "off"}):
            if kind == "token":
                tokens.append(payload)
            else:
                final = payload
        return tokens, final

    tokens, final = asyncio.run(collect())
    assert len(tokens) > 2  # the evidence, then the model's tokens one by one
    assert "".join(tokens) == final["answer"]
    assert tokens[0].startswith("> ") and final["answer"].endswith("\n\nOverspending comes out of next month.")
    # The split section came back whole, in order.
    rollover = [b["part_index"] for b in final["context"] if b["group_id"] == "rollover"]
    assert rollover == [1, 2]


class CountingChat(GenericFakeChatModel):
    """Streams its sentences a word at a time and counts the words it was asked for."""
    sentences: list = []
    pulled: int = 0

    async def _astream(self, *args, **kwargs):
        from langchain_core.outputs import ChatGenerationChunk
        from langchain_core.messages import AIMessageChunk
        for sentence in self.sentences:
            for word in sentence.split(" "):
                self.pulled += 1
                yield ChatGenerationChunk(message=AIMessageChunk(content=word + " "))


INVENTED = "Open the Frobnicator panel and press Zorble."


@pytest.mark.parametrize("verify,written", [("drop", 3), ("flag", 5)])
def test_a_model_whose_sentences_keep_being_dropped_is_stopped(verify, written):
    chat = CountingChat(messages=iter([]), sentences=[INVENTED] * 4 + ["Overspent money is taken from next month."])
    resources = make_resources(RECORDS, chat_model=chat)
    state = asyncio.run(build_graph().ainvoke({"question": "Why does overspent money reduce next month?"},
                                              config_for(resources, min_similarity=0.1, verify=verify)))
    generated = [s for s in state["sentences"] if s["origin"] == "generated"]
    assert len(generated) == written
    if verify == "drop":  # three in a row left out: the rest of the stream was never asked for
        assert chat.pulled < len(" ".join([INVENTED] * 4).split(" "))
        assert "Frobnicator" not in state["answer"]


def test_nothing_survives_so_the_graph_abstains_without_calling_the_model():
    resources = make_resources(RECORDS, chat_model=ExplodingChat(messages=iter([])))
    state = asyncio.run(build_graph().ainvoke({"question": "How do I export invoices?"},
                                              config_for(resources, min_similarity=0.99)))
    assert state["abstain"] is True and state["context"] == []
    assert state["coverage"] == "not_covered" and state["coverage_reason"] == "no candidate passed the similarity threshold"
    assert state["answer"].startswith("The documentation does not cover this question")
    assert "Reports screen > Export button" in state["answer"]


def test_an_abstention_streams_its_message_as_tokens_like_any_answer():
    resources = make_resources(RECORDS, chat_model=ExplodingChat(messages=iter([])))

    async def collect():
        tokens, final = [], None
        async for kind, payload in stream_answer(build_graph(), "How do I export invoices?", resources,
                                                 {"min_similarity": 0.99}):
            (tokens.append(payload) if kind == "token" else None)
            final = payload if kind == "state" else final
        return tokens, final

    tokens, final = asyncio.run(collect())
    assert final["abstain"] is True and tokens and "".join(tokens) == final["answer"]


def test_a_partial_verdict_opens_the_answer_in_words_before_the_quotes():
    """Most of what the question asks (zorblax, quuxcoin, frobnitz) is in no quote: they are only the
    closest the docs come, and the answer says so first, streamed like the rest."""
    resources = make_resources(RECORDS, chat_model=fake_chat("Open Reports and press Export."))

    async def collect():
        tokens, final = [], None
        async for kind, payload in stream_answer(
                build_graph(), "Can I export invoices to zorblax, quuxcoin or frobnitz?", resources,
                {"min_similarity": 0.1, "rerank_min": 0.0, "max_chunks": 2, "verify": "off"}):
            (tokens.append(payload) if kind == "token" else None)
            final = payload if kind == "state" else final
        return tokens, final

    tokens, final = asyncio.run(collect())
    assert final["abstain"] is False and final["coverage"] == "partial"
    assert "quuxcoin" in final["coverage_reason"]  # of the words no quote holds, the first of the longest
    preface = "The docs do not answer whether you can export invoices to zorblax, quuxcoin or frobnitz. " \
              "Here is what they have that is closest:"
    assert tokens[0] == preface and final["answer"].startswith(preface + "\n\n> Press the Export button")
    assert "".join(tokens) == final["answer"]


def test_a_conversation_keeps_its_messages_across_turns():
    resources = make_resources(RECORDS, chat_model=fake_chat("First answer.", "Second answer."))
    app = build_graph(MemorySaver())
    config = config_for(resources, min_similarity=0.1, verify="off")
    config["configurable"]["thread_id"] = "conv-1"
    first = asyncio.run(app.ainvoke({"question": "What is the monthly rollover?"}, config))
    second = asyncio.run(app.ainvoke({"question": "And what about overspending?"}, config))
    messages = app.get_state(config).values["messages"]
    assert [m.content for m in messages] == ["What is the monthly rollover?", first["answer"],
                                             "And what about overspending?", second["answer"]]
    assert first["answer"].endswith("First answer.") and second["answer"].endswith("Second answer.")
    # The follow-up was made standalone with the topic of the first answer before retrieval read it.
    assert second["standalone_question"] == "And what about overspending? — about: Monthly rollover"


def test_retrieval_graph_gives_the_result_line_of_the_contract():
    resources = make_resources(RECORDS)
    state = build_retrieval_graph().invoke({"question": "How does the monthly rollover work?"},
                                           config_for(resources, min_similarity=0.1))
    line = result_line("q-1", state, 12.5)
    assert list(line) == ["id", "intent", "abstain", "context", "stages", "timings_ms"]
    assert list(line["stages"]) == ["search", "threshold", "rerank", "cap"]
    assert line["timings_ms"]["total"] == 12.5 and "embed" in line["timings_ms"]
    assert list(line["context"][0]) == ["chunk_id", "group_id", "part_index", "part_count", "source",
                                        "heading_path", "chunk_type", "content_kind", "text", "similarity",
                                        "rerank_score", "images"]


@pytest.mark.parametrize("override,expected", [({"max_chunks": 1}, 1), ({"max_chunks": 3}, 3)])
def test_per_request_caps_change_the_result(override, expected):
    resources = make_resources(RECORDS)
    state = build_retrieval_graph().invoke({"question": "export invoices monthly rollover members"},
                                           config_for(resources, min_similarity=0.0, rerank_min=-1,
                                                      context_token_budget=1, **override))
    assert len(state["cap_results"]) == expected  # a budget the first chunk fills: no small-chunk allowance


def test_the_check_defaults_per_generator_and_an_unknown_verify_mode_is_refused():
    from fieldguide.settings import Settings
    from graph.options import InvalidOption, QueryOptions

    local = QueryOptions.from_config({}, Settings(chat_provider="local"))
    endpoint = QueryOptions.from_config({}, Settings(chat_provider="openai"))
    assert (local.verify, local.min_support) == ("drop", 0.8)
    assert (endpoint.verify, endpoint.min_support) == ("drop", 0.6)
    chosen = QueryOptions.from_config({"configurable": {"verify": "OFF", "min_support": "0.5"}}, Settings())
    assert (chosen.verify, chosen.min_support) == ("off", 0.5)
    with pytest.raises(InvalidOption, match="option verify: .*'off', 'flag' or 'drop'"):
        QueryOptions.from_config({"configurable": {"verify": "maybe"}}, Settings())


def test_a_batch_goes_on_when_one_turn_fails_and_numbers_conversation_turns():
    from fieldguide.retrieval import answer_batch

    class FailsOnce(GenericFakeChatModel):
        async def _astream(self, messages, *args, **kwargs):
            if "invoices" in messages[-1].content.split("Question:")[-1]:
                raise TimeoutError("no streaming chunk received")
            async for chunk in super()._astream(messages, *args, **kwargs):
                yield chunk

    resources = make_resources(RECORDS, chat_model=FailsOnce(messages=iter([AIMessage("Fine."), AIMessage("Ok.")])),
                               min_similarity=0.1)
    items = [{"id": "q1", "question": "How do I export invoices on the reports screen?"},
             {"id": "c1", "turns": [{"question": "What is the monthly rollover?"}, {"question": "And overspending?"}]}]

    async def collect():
        return [line async for line in answer_batch(build_graph(MemorySaver()), items, resources)]

    lines = asyncio.run(collect())
    assert [line["id"] for line in lines] == ["q1", "c1#1", "c1#2"]
    assert lines[0] == {"id": "q1", "error": "TimeoutError: no streaming chunk received"}
    assert lines[1]["answer"] and lines[2]["standalone_question"].startswith("And overspending? — about: ")
