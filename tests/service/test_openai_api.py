"""/v1/chat/completions and /v1/models, driven by the official `openai` client against a real server."""
from __future__ import annotations

import sys
from pathlib import Path

import httpx
import openai
import pytest
from pydantic import Field

from fieldguide.service import create_app
from fieldguide_testing.scripted_graph import DEFAULT_ANSWER, ScriptedChatModel, build_scripted_graph
from fieldguide_testing.serving import make_app, make_settings, serve

sys.path.insert(0, str(Path(__file__).parents[1] / "nodes"))
from fakes import make_resources, record  # noqa: E402


@pytest.fixture(scope="module")
def openai_server():
    with serve(make_app()) as base:
        yield base


@pytest.fixture
def client(openai_server):
    return openai.OpenAI(base_url=openai_server + "/v1", api_key="not-needed", max_retries=0, timeout=30)


def test_models_lists_fieldguide(client):
    assert [model.id for model in client.models.list()] == ["fieldguide"]
    assert client.models.retrieve("fieldguide").id == "fieldguide"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-nothing")


def test_a_completion_carries_the_answer_and_its_citations(client, openai_server):
    response = client.chat.completions.create(
        model="fieldguide", messages=[{"role": "user", "content": "Which fields does the booking form have?"}])
    assert response.object == "chat.completion"
    assert response.choices[0].message.role == "assistant"
    assert response.choices[0].message.content == DEFAULT_ANSWER
    assert response.choices[0].finish_reason == "stop"
    (citation,) = response.model_extra["citations"]
    assert citation["n"] == 1 and citation["source"] == "screens/booking-form.md"
    assert citation["heading_path"] == ["Booking form", "**Fields** of the [form](booking-form.md) {#fields}"]
    # absolute (a client opens it), at the cited lines, as the answer's marker [1] names it
    assert citation["url"] == openai_server + "/docs-assets/screens/booking-form.md#L5-L12"
    assert citation["chunk_id"] == "screens/booking-form.md#new-booking" and "[1]" in DEFAULT_ANSWER
    assert response.model_extra["fieldguide"] == {"abstain": False, "coverage": "covered", "coverage_reason": "",
                                                  "intent": "screen",
                                                  "standalone_question": "Which fields does the booking form have?"}


def test_a_stream_carries_the_tokens_then_the_citations(client):
    stream = client.chat.completions.create(
        model="fieldguide", stream=True,
        messages=[{"role": "system", "content": "Be brief."},
                  {"role": "user", "content": [{"type": "text", "text": "Which fields are there?"}]}])
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == DEFAULT_ANSWER
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["citations"][0]["source"] == "screens/booking-form.md"
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)


@pytest.mark.parametrize("messages, param", [
    ([], "messages"),
    ([{"role": "user", "content": "   "}], "messages"),
    ([{"role": "user", "content": "Hi?"}, {"role": "assistant", "content": "Hello."}], "messages"),
    ([{"role": "wizard", "content": "Hi?"}], "messages.0.role"),
    ([{"role": "user", "content": "x" * 2001}], "messages"),
])
def test_bad_messages_get_an_openai_shaped_400(client, messages, param):
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="fieldguide", messages=messages)
    error = refused.value.body
    assert error["type"] == "invalid_request_error" and error["param"] == param and error["message"]


def test_limits_and_unknown_models_are_refused(client):
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="fieldguide", max_tokens=5000,
                                       messages=[{"role": "user", "content": "Which fields?"}])
    assert refused.value.body["param"] == "max_tokens"
    assert "FIELDGUIDE_PUBLIC_MAX_ANSWER_TOKENS" in refused.value.body["message"]
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="fieldguide", temperature=3,
                                       messages=[{"role": "user", "content": "Which fields?"}])
    assert refused.value.body["param"] == "temperature"
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Which fields?"}])
    assert missing.value.body["code"] == "model_not_found"


def test_a_body_that_is_not_json_gets_400(openai_server):
    response = httpx.post(openai_server + "/v1/chat/completions", content=b"{not json",
                          headers={"content-type": "application/json"}, timeout=30)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_a_failing_pipeline_is_a_500_or_an_error_line_with_no_traceback_for_the_client(server_for):
    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, fail_with=RuntimeError("boom"))

    base = server_for(make_app(factory))
    client = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=30)
    with pytest.raises(openai.InternalServerError) as failed:
        client.chat.completions.create(model="fieldguide", messages=[{"role": "user", "content": "Which fields?"}])
    assert failed.value.body["message"] == "the pipeline failed: RuntimeError"
    with pytest.raises(openai.APIError, match="the pipeline failed"):
        list(client.chat.completions.create(model="fieldguide", stream=True,
                                            messages=[{"role": "user", "content": "Which fields?"}]))


class RecordingChat(ScriptedChatModel):
    prompts: list = Field(default_factory=list)

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        self.prompts.append([(type(m).__name__, m.content) for m in messages])
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk


def test_earlier_messages_are_the_conversation_the_real_graph_reads(server_for):
    from graph.graph import build_graph

    chat = RecordingChat(answer="Press Export on the Reports screen.")
    resources = make_resources([record("export", "Press the Export button on the Reports screen.",
                                       heading_path=("Reports", "Export"), source="reports.md")], chat_model=chat)
    app = create_app(make_settings(), lambda checkpointer=None: build_graph(checkpointer),
                     configurable={"resources": resources}, readiness=lambda: None)
    base = server_for(app)
    client = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=30)
    response = client.chat.completions.create(model="fieldguide", messages=[
        {"role": "user", "content": "What can I do on the Reports screen?"},
        {"role": "assistant", "content": "You can export invoices."},
        {"role": "user", "content": "How do I export them?"}])
    # the checked answer: the evidence quoted first, with the marker its citation carries
    content = response.choices[0].message.content
    assert content.startswith("> Press the Export button on the Reports screen. [1]")
    (prompt,) = chat.prompts
    assert prompt[1:3] == [("HumanMessage", "What can I do on the Reports screen?"),
                           ("AIMessage", "You can export invoices.")]
    assert "How do I export them?" in prompt[-1][1]
    (citation,) = response.model_extra["citations"]
    assert citation["n"] == 1 and citation["source"] == "reports.md" and citation["chunk_id"] == "export"
    assert citation["url"].startswith(base + "/docs-assets/reports.md")
    assert response.model_extra["fieldguide"]["standalone_question"].startswith("How do I export them?")
    # the run's thread is forgotten: nothing piles up in the checkpointer
    assert not app.state.service.checkpointer.thread_ids()
