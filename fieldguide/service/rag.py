"""LangServe routes over the service's compiled graph, at `/rag`.

The graph is compiled with the service's checkpointer, so every run needs a `thread_id`.
LangServe only forwards config keys the runnable declares, which drops a client's
`thread_id`; it is therefore set here, per request: from the `X-Thread-Id` header when a
client wants a multi-turn thread, else a fresh one (the bounded checkpointer forgets
old threads). Shared resources (models, store) are injected the same way.
"""
from __future__ import annotations

import re
import secrets
from typing import Any

from fastapi import FastAPI, Request
from typing_extensions import NotRequired, TypedDict

THREAD_HEADER = "x-thread-id"
_THREAD_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,80}$")


class RagInput(TypedDict):
    """What /rag accepts. Declared here because the playground's form cannot render
    `str | None` fields (the graph's own input schema has one)."""

    question: str
    conversation_id: NotRequired[str]


def add_rag_routes(app: FastAPI, graph, *, configurable: dict[str, Any] | None = None, path: str = "/rag") -> None:
    from langserve import add_routes

    extra = dict(configurable or {})

    def per_request_config(config: dict[str, Any], request: Request) -> dict[str, Any]:
        config = dict(config)
        settings = dict(config.get("configurable") or {})
        requested = request.headers.get(THREAD_HEADER, "")
        settings["thread_id"] = requested if _THREAD_ID.match(requested) else "rag-" + secrets.token_hex(12)
        settings.update(extra)
        config["configurable"] = settings
        return config

    add_routes(
        app,
        graph.with_types(input_type=RagInput),
        path=path,
        per_req_config_modifier=per_request_config,
        enable_feedback_endpoint=False,
        enable_public_trace_link_endpoint=False,
    )
