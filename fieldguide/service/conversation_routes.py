"""The conversation routes: submit a question, follow its answer as Server-Sent Events, vote on a
turn, hand the conversation to support; and the liveness and readiness probes.

    POST /conversations            202 {"conversation_id", "stream_url"}; the turn runs in the background
    GET  /conversations/{id}/stream  SSE: status, sources, token, done, error (ids only grow)
    POST /conversations/{id}/feedback  a vote (and a comment) on one turn
    POST /conversations/{id}/handoff   the conversation to support, stored and delivered (handoff.py)
    GET  /healthz, /readyz         liveness, readiness (store reachable, index built with our model)
"""
from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import BackgroundTasks, FastAPI, Header
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sse_starlette import EventSourceResponse

from fieldguide.errors import StateUnavailable
from fieldguide.service.conversations import Conversation, ConversationLimitReached

RETRY_MS = 1000  # how soon a browser's EventSource reconnects after a dropped stream
RETRY_FRAME = f"retry: {RETRY_MS}\r\n\r\n".encode()  # a block with no data: sets the delay, no event


class FeedbackIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turn: int = Field(ge=1, le=1_000_000)
    rating: Literal["up", "down"]
    comment: str = Field("", max_length=2000)


class HandoffIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turn: int = Field(ge=1, le=1_000_000)
    contact: str = Field(min_length=1, max_length=320)
    message: str = Field("", max_length=2000)

    @field_validator("contact")
    @classmethod
    def one_line(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("say how support can reach you (an email address, for instance)")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise ValueError("the contact must be one line of text")
        return value


class QuestionIn(BaseModel):
    question: str
    conversation_id: str | None = Field(None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    labels: list[str] | None = Field(None, max_length=50, description="Doc sets to answer from (default: "
                                     "FIELDGUIDE_LABELS, else every set); an unknown label is refused.")


def invalid(field_name: str, message: str, value: Any) -> RequestValidationError:
    return RequestValidationError([{"type": "value_error", "loc": ("body", field_name), "msg": message,
                                    "input": value}])


async def follow(service, conversation: Conversation, cursor: int):
    """Events after `cursor`, then new ones as they come, until the turn ends (SSE body)."""
    conversation.listener_joined()
    try:
        yield RETRY_FRAME
        async for frames in conversation.stream(cursor):
            yield frames
    finally:
        conversation.listener_left()
        if not conversation.evicted:
            try:
                await service.with_state(service.conversations.touch, conversation)
            except StateUnavailable:
                pass  # the reader is gone anyway; the log's time to live is renewed by the next one


def add_conversation_routes(app: FastAPI, service) -> None:
    """POST /conversations, its stream, its feedback and its handoff, on `service` (app.Service)."""
    settings = service.settings
    conversations = service.conversations

    _add_start_route(app, service)

    @app.get("/conversations/{conversation_id}/stream")
    async def stream_conversation(conversation_id: str, after: int = 0,
                                  last_event_id: str | None = Header(None)):
        conversation = await service.with_state(conversations.get, conversation_id)
        if conversation is None:
            return JSONResponse({"detail": "unknown conversation"}, status_code=404)
        cursor = after
        if last_event_id and last_event_id.strip().isdigit():
            cursor = int(last_event_id.strip())  # a reconnect: continue after what was received
        return EventSourceResponse(
            follow(service, conversation, max(0, cursor)),
            ping=settings.heartbeat_seconds,
            send_timeout=30,
            headers={"Cache-Control": "no-store"},
        )

    @app.post("/conversations/{conversation_id}/feedback", status_code=204)
    async def conversation_feedback(conversation_id: str, body: FeedbackIn) -> Response:
        """Thumbs up or down (and a comment) on turn `turn` of a conversation, stored with a copy
        of the turn: question, standalone question, answer, citations, index version."""
        stored = await service.with_state(service.state.turns.add_feedback, conversation_id, body.turn,
                                          body.rating, body.comment.strip())
        if stored is None:
            return JSONResponse({"detail": "unknown conversation or turn"}, status_code=404)
        return Response(status_code=204)

    @app.post("/conversations/{conversation_id}/handoff", status_code=202)
    async def conversation_handoff(conversation_id: str, body: HandoffIn) -> JSONResponse:
        """Send the conversation up to turn `turn` to support (handoff.py): stored, then delivered
        by the worker with retries. 409 when no target is configured."""
        handoff = service.handoff
        if not handoff.targets.configured:
            return JSONResponse({"detail": "no handoff target is configured (FIELDGUIDE_HANDOFF_WEBHOOK_URL or "
                                           "FIELDGUIDE_HANDOFF_SMTP_URL)"}, status_code=409)

        def submit():
            try:
                return handoff.submit(service.state.outbox, service.state.turns, conversation_id, body.turn,
                                      body.contact, body.message.strip())
            except LookupError as exc:
                return exc

        result = await asyncio.to_thread(submit)
        if result is None:
            return JSONResponse({"detail": "unknown conversation or turn"}, status_code=404)
        if isinstance(result, LookupError):
            return JSONResponse({"detail": str(result)}, status_code=409)
        return JSONResponse({"handoff_id": result, "status": "queued"}, status_code=202)


def _add_start_route(app: FastAPI, service) -> None:
    """POST /conversations: a new conversation, or the next turn of one; 202 and the stream's URL."""
    settings = service.settings
    conversations = service.conversations

    @app.post("/conversations", status_code=202)
    async def start_conversation(body: QuestionIn, background: BackgroundTasks) -> JSONResponse:
        question = body.question.strip()
        if not question:
            raise invalid("question", "the question is empty", body.question)
        if len(question) > settings.max_question_chars:
            raise invalid("question", f"the question is longer than {settings.max_question_chars} characters",
                          f"{len(question)} characters")
        labels = None
        if body.labels:
            from fieldguide.labels import InvalidLabel

            try:
                labels = await asyncio.to_thread(service.doc_sets.checked, body.labels)
            except InvalidLabel as exc:
                raise invalid("labels", str(exc), body.labels) from None

        def admit() -> tuple[Conversation | None, str | JSONResponse]:
            if body.conversation_id is not None:
                conversation = conversations.get(body.conversation_id)
                if conversation is None:
                    return None, JSONResponse({"detail": "unknown conversation (it may have expired)"}, status_code=404)
                if not service.reserve_turn(conversation):
                    return None, JSONResponse({"detail": "this conversation is still answering its previous question"},
                                              status_code=409)
                conversations.touch(conversation)
                return conversation, f"/conversations/{conversation.id}/stream?after={conversation.turn_started_at_id}"
            try:
                conversation = conversations.create()
            except ConversationLimitReached as exc:
                return None, JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "1"})
            service.reserve_turn(conversation)
            return conversation, f"/conversations/{conversation.id}/stream"

        conversation, stream_url = await service.with_state(admit)
        if conversation is None:
            return stream_url
        # Started once the 202 is on the wire: a run's first steps cost CPU the reply need not wait for.
        background.add_task(service.begin_turn, conversation, question, labels)
        return JSONResponse({"conversation_id": conversation.id, "stream_url": stream_url}, status_code=202,
                            background=background)


def add_health_routes(app: FastAPI, service) -> None:
    """GET /healthz (the process answers) and GET /readyz (the state and the store answer, the index fits)."""
    @app.get("/healthz")
    async def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        reason = await service.ready()
        if reason is None:
            body = {"status": "ready"}
            if service.index_description:
                body["calibration"] = service.index_description
            model = service.model_status()
            if model is not None:
                body["model"] = model
            return JSONResponse(body)
        return JSONResponse({"status": "unavailable", "reason": reason}, status_code=503)
