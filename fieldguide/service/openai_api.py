"""OpenAI-compatible chat: `POST /v1/chat/completions` (streaming and not) and `GET /v1/models`.

Any OpenAI client or widget can talk to fieldguide: the last message (a user's) is the
question, earlier user and assistant messages are the conversation, and the answer is the
assistant message's content. Citations come in an extra top-level field, `citations` (on the
response, or on the last chunk of a stream), each `{"n", "chunk_id", "source", "heading_path",
"line_start", "line_end", "url"}`; `fieldguide` carries `abstain`, `coverage`, `coverage_reason`,
`intent` and, when the graph gives one, `standalone_question`. System messages are ignored: the pipeline's own
prompts say how to answer. `max_tokens` (or `max_completion_tokens`) and `temperature` become
the run's `max_answer_tokens` and `temperature`, within the server's public limits. An extra
body field, `labels` (a list of doc set labels, or one comma-separated string), limits the answer
to those doc sets (versions, products); an unknown label is a 400 naming `labels`.

Errors have OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, with 400 for a
bad request, 404 for an unknown model, 500 when the pipeline fails (mid-stream: one `error`
data line, as OpenAI's streams do).
"""
from __future__ import annotations

import json
import logging
import secrets
import time
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fieldguide.retrieval import coverage_of
from fieldguide.service.answers import citations_for

log = logging.getLogger("fieldguide.service")

MODEL_ID = "fieldguide"


class TextPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text or "" for part in self.content if part.type in ("text", "input_text"))
        return self.content or ""


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    n: int = Field(1, ge=1, le=1)
    labels: list[str] | str | None = None  # fieldguide's own: the doc sets to answer from


class OpenAIError(Exception):
    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None,
                 kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.kind = status, message, param, code, kind

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status)


def read_request(raw: bytes, settings) -> tuple[ChatRequest, str, list, dict[str, Any]]:
    """(request, question, earlier turns as LangChain messages, run options), or OpenAIError."""
    from langchain_core.messages import AIMessage, HumanMessage

    from graph.options import InvalidOption, QueryOptions, check_public_limits

    try:
        body = json.loads(raw or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise OpenAIError(400, f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise OpenAIError(400, "the body must be a JSON object")
    try:
        request = ChatRequest.model_validate(body)
    except ValidationError as exc:
        error = exc.errors()[0]
        param = ".".join(str(part) for part in error["loc"]) or None
        raise OpenAIError(400, f"{param}: {error['msg']}" if param else error["msg"], param=param) from None
    if request.model != MODEL_ID:
        raise OpenAIError(404, f"The model `{request.model}` does not exist; this server has `{MODEL_ID}`.",
                          param="model", code="model_not_found")
    last = request.messages[-1]
    if last.role != "user":
        raise OpenAIError(400, "the last message must be the user's question", param="messages")
    question = " ".join(last.text().split())
    if not question:
        raise OpenAIError(400, "the question (the last user message) is empty", param="messages")
    if len(question) > settings.max_question_chars:
        raise OpenAIError(400, f"the question is longer than {settings.max_question_chars} characters",
                          param="messages")
    history = []
    for message in request.messages[:-1]:
        text = message.text().strip()
        if text and message.role == "user":
            history.append(HumanMessage(content=text))
        elif text and message.role == "assistant":
            history.append(AIMessage(content=text))
    options: dict[str, Any] = {}
    answer_tokens = request.max_completion_tokens or request.max_tokens
    param = "max_completion_tokens" if request.max_completion_tokens else "max_tokens"
    if answer_tokens is not None:
        options["max_answer_tokens"] = answer_tokens
    if request.temperature is not None:
        options["temperature"] = request.temperature
    if request.labels:
        from fieldguide.labels import InvalidLabel, parse_labels

        try:
            labels = parse_labels(request.labels)
        except InvalidLabel as exc:
            raise OpenAIError(400, f"labels: {exc}", param="labels") from None
        if labels:
            options["labels"] = labels
    try:
        check_public_limits(QueryOptions.validate_overrides(options), settings)
    except InvalidOption as exc:
        name = param if exc.field == "max_answer_tokens" else exc.field
        raise OpenAIError(400, f"{name}: {exc.reason}", param=name) from None
    return request, question, history, options


def add_openai_routes(app: FastAPI, service) -> None:
    settings = service.settings

    async def check_labels(labels) -> None:
        import asyncio

        from fieldguide.labels import InvalidLabel

        try:
            await asyncio.to_thread(service.doc_sets.checked, labels)
        except InvalidLabel as exc:
            raise OpenAIError(400, f"labels: {exc}", param="labels") from None

    @app.get("/v1/models")
    async def list_models() -> dict:
        return {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "created": 0,
                                            "owned_by": "fieldguide"}]}

    @app.get("/v1/models/{model_id}")
    async def get_model(model_id: str):
        if model_id != MODEL_ID:
            return OpenAIError(404, f"The model `{model_id}` does not exist.", param="model",
                               code="model_not_found").response()
        return {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "fieldguide"}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        try:
            chat, question, history, options = read_request(await request.body(), settings)
            if options.get("labels") and service.doc_sets is not None:
                await check_labels(options["labels"])
        except OpenAIError as exc:
            return exc.response()
        completion_id = "chatcmpl-" + secrets.token_hex(12)
        created = int(time.time())
        resolve = _absolute(service, request)
        if not chat.stream:
            try:
                final = await service.runner.answer(question, options, history)
            except Exception as exc:
                return _failure(exc).response()
            return JSONResponse({
                "id": completion_id, "object": "chat.completion", "created": created, "model": MODEL_ID,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": final.get("answer", "")}}],
                "usage": None,
                **_extras(final, resolve),
            })
        return _streamed_completion(service, question, options, history, completion_id, created, resolve)


def _absolute(service, request: Request):
    """`resolve(source)`: a docs file's URL, made absolute with the request's base URL."""
    base = str(request.base_url).rstrip("/")

    def resolve(source: str) -> str:
        url = service.resolve(source)
        return base + url if url.startswith("/") else url
    return resolve


def _extras(final: dict[str, Any], resolve) -> dict[str, Any]:
    """What a completion carries besides the answer: its citations and fieldguide's own details."""
    details = {"abstain": bool(final.get("abstain", False)), "coverage": coverage_of(final),
               "coverage_reason": final.get("coverage_reason") or "", "intent": final.get("intent")}
    if final.get("standalone_question"):
        details["standalone_question"] = final["standalone_question"]
    return {"citations": citations_for(final, resolve), "fieldguide": details}


def _streamed_completion(service, question: str, options: dict, history, completion_id: str, created: int,
                         resolve) -> StreamingResponse:
    """The answer as chat.completion.chunk events: the role, each token, the last chunk with the
    citations, then [DONE]; a failure is an error event."""

    def chunk(delta: dict, finish: str | None = None, **extra) -> bytes:
        payload = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                   "model": MODEL_ID, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                   **extra}
        return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"

    async def events():
        yield chunk({"role": "assistant", "content": ""})
        streamed = False
        try:
            async for kind, payload in service.runner.stream(question, options, history):
                if kind == "token":
                    streamed = True
                    yield chunk({"content": payload})
                else:
                    rest = {} if streamed else {"content": payload.get("answer", "")}  # a graph that streamed nothing
                    yield chunk(rest, "stop", **_extras(payload, resolve))
        except Exception as exc:
            yield b"data: " + json.dumps(_failure(exc).body()).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


def _failure(exc: BaseException) -> OpenAIError:
    from fieldguide.errors import FieldguideError

    if isinstance(exc, FieldguideError):
        status = 400 if isinstance(exc, ValueError) else 503
        return OpenAIError(status, str(exc), kind="invalid_request_error" if status == 400 else "server_error")
    log.exception("a chat completion failed")
    return OpenAIError(500, f"the pipeline failed: {type(exc).__name__}", kind="server_error")
