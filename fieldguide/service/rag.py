"""LangServe routes over the service's compiled graph, at `/rag`.

The graph is compiled with the service's checkpointer, so every run needs a `thread_id`.
LangServe only forwards config keys the runnable declares, which drops a client's
`thread_id`; it is therefore set here, per request: from the `X-Thread-Id` header when a
client wants a multi-turn thread, else a fresh one (the bounded checkpointer forgets
old threads). Shared resources (models, store) are injected the same way.

The run options (`graph.options.QueryOptions`) are declared to LangServe as the runnable's
configurable fields, with their bounds and, for the options that cost work (k, budgets,
answer tokens), the public limits of the settings as upper bounds. So `/rag/config_schema`
and the playground show them, and RemoteRunnable's `configurable` reaches the graph. LangServe
checks the types itself but copies its request models without their bounds, so the bounds
are checked here, per request: a value out of bounds gets 422 naming the field before
anything runs. `/rag/batch` is off: one request is one question, so no client can queue an
unbounded list of runs with one call.
"""
from __future__ import annotations

import re
import secrets
from typing import Any

from fastapi import FastAPI, Request
from langchain_core.runnables import RunnableBinding
from langchain_core.runnables.utils import ConfigurableFieldSpec
from pydantic import BaseModel, ConfigDict, create_model
from typing_extensions import NotRequired, TypedDict

from graph.options import QueryOptions, option_annotations

THREAD_HEADER = "x-thread-id"
_THREAD_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,80}$")


class RagInput(TypedDict):
    """What /rag accepts. Declared here because the playground's form cannot render
    `str | None` fields (the graph's own input schema has one)."""

    question: str
    conversation_id: NotRequired[str]


def option_specs(settings) -> list[ConfigurableFieldSpec]:
    """The run options as LangChain configurable fields: each with the server's value as its
    default and the public limits of `settings` as upper bounds. Not optional (the playground's
    forms cannot render a null choice): a client leaves out what it does not set."""
    annotations = option_annotations(settings, optional=False)
    defaults = QueryOptions().resolved(settings)
    return [ConfigurableFieldSpec(id=name, annotation=annotations[name], name=name,
                                  description=field.description, default=getattr(defaults, name))
            for name, field in QueryOptions.model_fields.items()]


def bounds_model(settings) -> type[BaseModel]:
    """A request config's `configurable`, checked against each option's bounds and public limit."""
    annotations = option_annotations(settings)
    options = create_model("PublicOptions", __config__=ConfigDict(extra="ignore"),
                           **{name: (annotation, None) for name, annotation in annotations.items()})
    return create_model("PublicConfig", __config__=ConfigDict(extra="ignore"), configurable=(options, None))


def with_declared_options(graph, specs: list[ConfigurableFieldSpec]):
    """`graph` (taking `RagInput`), declaring `specs` as its configurable fields. A class per call:
    LangChain rebuilds a binding from its class alone (`with_config`), so the specs live there."""

    class DeclaredOptions(RunnableBinding):
        @property
        def config_specs(self) -> list[ConfigurableFieldSpec]:
            return specs

    return DeclaredOptions(bound=graph, custom_input_type=RagInput)


def add_rag_routes(app: FastAPI, graph, *, settings, configurable: dict[str, Any] | None = None,
                   path: str = "/rag") -> None:
    from langserve import add_routes

    extra = dict(configurable or {})
    bounded = bounds_model(settings)

    def per_request_config(config: dict[str, Any], request: Request) -> dict[str, Any]:
        config = dict(config)
        options = {name: value for name, value in (config.get("configurable") or {}).items() if value is not None}
        bounded.model_validate({"configurable": options})  # a ValidationError here is LangServe's 422
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
        disabled_endpoints=["batch"],
    )
