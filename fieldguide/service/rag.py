"""LangServe routes over the service's compiled graph, at `/rag`.

The graph is compiled with the service's checkpointer, so every run needs a `thread_id`.
LangServe only forwards config keys the runnable declares, which drops a client's
`thread_id`; it is therefore set here, per request: from the `X-Thread-Id` header when a
client wants a multi-turn thread, else a fresh one (the bounded checkpointer forgets
old threads). Shared resources (models, store) are injected the same way.

The run options (`graph.runtime.QueryOptions`) are declared to LangServe as the runnable's
configurable fields, with their bounds and, for the options that cost work (k, budgets,
answer tokens), the public limits of the settings as upper bounds. So `/rag/config_schema`
and the playground show them, RemoteRunnable's `configurable` reaches the graph, and a value
out of bounds gets 422 naming the field before anything runs.
"""
from __future__ import annotations

import re
import secrets
from typing import Any

from fastapi import FastAPI, Request
from langchain_core.runnables import RunnableBinding
from langchain_core.runnables.utils import ConfigurableFieldSpec
from typing_extensions import NotRequired, TypedDict

from graph.runtime import QueryOptions, option_annotations

THREAD_HEADER = "x-thread-id"
_THREAD_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,80}$")


class RagInput(TypedDict):
    """What /rag accepts. Declared here because the playground's form cannot render
    `str | None` fields (the graph's own input schema has one)."""

    question: str
    conversation_id: NotRequired[str]


def option_specs(settings=None) -> list[ConfigurableFieldSpec]:
    """The run options as LangChain configurable fields (bounded by `settings`' public limits)."""
    annotations = option_annotations(settings)
    return [ConfigurableFieldSpec(id=name, annotation=annotations[name], name=name,
                                  description=field.description, default=field.default)
            for name, field in QueryOptions.model_fields.items()]


def with_declared_options(graph, specs: list[ConfigurableFieldSpec]):
    """`graph` (taking `RagInput`), declaring `specs` as its configurable fields. A class per call:
    LangChain rebuilds a binding from its class alone (`with_config`), so the specs live there."""

    class DeclaredOptions(RunnableBinding):
        @property
        def config_specs(self) -> list[ConfigurableFieldSpec]:
            return specs

    return DeclaredOptions(bound=graph, custom_input_type=RagInput)


def add_rag_routes(app: FastAPI, graph, *, configurable: dict[str, Any] | None = None, path: str = "/rag",
                   settings=None) -> None:
    from langserve import add_routes

    extra = dict(configurable or {})

    def per_request_config(config: dict[str, Any], request: Request) -> dict[str, Any]:
        config = dict(config)
        options = {name: value for name, value in (config.get("configurable") or {}).items() if value is not None}
        requested = request.headers.get(THREAD_HEADER, "")
        options["thread_id"] = requested if _THREAD_ID.match(requested) else "rag-" + secrets.token_hex(12)
        options.update(extra)
        config["configurable"] = options
        return config

    add_routes(
        app,
        with_declared_options(graph, option_specs(settings)),
        path=path,
        per_req_config_modifier=per_request_config,
        enable_feedback_endpoint=False,
        enable_public_trace_link_endpoint=False,
    )
