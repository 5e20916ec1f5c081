"""The HTTP service: submit a question, follow its answer as Server-Sent Events.

`create_app` wires one compiled graph (built by `graph_factory(checkpointer=...)`, the
real query graph by default) into:

    POST /conversations            202 {"conversation_id", "stream_url"}; the turn runs in the background
                                   (this and the stream, feedback and handoff: conversation_routes.py)
    GET  /conversations/{id}/stream  SSE: status, sources, token, done, error (ids only grow)
    /rag/...                       LangServe routes over the same graph
    GET  /healthz, /readyz         liveness, readiness (store reachable, index built with our model)
    GET  /                         the chat page (plus its scripts, libraries and the docs' images)
    POST /v1/chat/completions      OpenAI-compatible chat (openai_api.py), GET /v1/models
    /mcp                           the MCP server over streamable HTTP (mcp_server.py)
    GET  /widget.js                the embeddable chat widget (widget.py)
    POST /conversations/{id}/handoff  the conversation to support, stored and delivered (handoff.py)
    GET  /console, /console/api/...  the docs team's console, behind a token (console.py)

Browsers on other origins may call it only from FIELDGUIDE_ALLOWED_ORIGINS (origins.py).

A janitor task cancels turns nobody has listened to for `abandon_after_seconds` and evicts
conversations idle longer than `event_log_ttl_seconds`. Where conversations live (event logs,
checkpoints, stored turns) is `FIELDGUIDE_STATE_URL` (see `fieldguide.service.state`).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from fieldguide.errors import StateUnavailable
from fieldguide.service.assets import resolve_asset_url
from fieldguide.service.conversation_routes import add_conversation_routes, add_health_routes
from fieldguide.service.conversations import Conversation
from fieldguide.service.engine import TurnEngine
from fieldguide.service.memory import ReleasePolicy, release_memory, settle_heap
from fieldguide.service.readiness import ReadinessCheck, index_calibration, store_readiness
from fieldguide.service.runs import GraphRunner
from fieldguide.service.state import ServiceState, open_state
from fieldguide.service.turns import run_turn
from fieldguide.settings import Settings, get_settings

log = logging.getLogger("fieldguide.service")

GraphFactory = Callable[..., Any]  # graph_factory(checkpointer=...) -> compiled graph
READINESS_TIMEOUT = 5.0
READINESS_CACHE_SECONDS = 1.0
SWITCH_INTERVAL_SECONDS = 0.001
HOUSEKEEPING_SECONDS = 30.0  # how often the state backend tidies what no conversation owns


INDEX_VERSION_SECONDS = 30.0


def default_graph_factory(checkpointer=None):
    from graph.graph import build_graph

    return build_graph(checkpointer=checkpointer)


def default_retrieval_graph():
    from graph.graph import build_retrieval_graph

    return build_retrieval_graph()


@dataclass
class Service:
    """Everything the routes share; one per app (`app.state.service`)."""

    settings: Settings
    graph: Any
    state: ServiceState
    readiness: ReadinessCheck
    configurable: dict[str, Any]
    release_policy: ReleasePolicy = field(default_factory=ReleasePolicy)
    resources: Any = None
    engine: TurnEngine = field(default_factory=TurnEngine)
    describe_index: Callable[[], dict | None] | None = None  # the index's calibration, shown by /readyz
    runner: GraphRunner | None = None  # one-call runs (OpenAI chat, MCP tools), on the same engine
    lifespans: list[Callable[[], Any]] = field(default_factory=list)  # async contexts the app's lifespan enters
    handoff: Any = None  # fieldguide.service.handoff.Handoff: the targets and their worker
    _ready_cache: tuple[float, str | None] | None = None
    _tidied_at: float = 0.0
    index_description: dict | None = None
    _index_version: tuple[float, str | None] | None = None
    doc_sets: Any = None  # the index's doc set labels (search_routes.DocSets)
    _vector_space: str | None = None

    @property
    def conversations(self):
        return self.state.conversations

    @property
    def checkpointer(self):
        return self.state.checkpointer

    def resolve(self, url: str, source: str = "") -> str:
        return resolve_asset_url(url, source, self.settings.image_base_url)

    async def with_state(self, function, *args):
        """Call `function` (registry work) directly, or, for state that lives on another server
        (Redis), in a worker thread: a slow round trip must not hold every other request."""
        if self.state.shared:
            return await asyncio.to_thread(function, *args)
        return function(*args)

    # -- turns ---------------------------------------------------------------------------
    def reserve_turn(self, conversation: Conversation) -> bool:
        """Mark a turn as running before it starts, so readers wait for it and follow-ups get 409.
        False when the conversation is still answering."""
        return conversation.reserve()

    async def begin_turn(self, conversation: Conversation, question: str, labels=None) -> None:
        self.start_turn(conversation, question, labels)  # (async: background tasks that are not run in a thread)

    def start_turn(self, conversation: Conversation, question: str, labels=None) -> None:
        conversation.reserved = False
        if conversation.evicted:
            return
        options = {"labels": tuple(labels)} if labels else {}
        config = {
            "configurable": {**options, **self.configurable, "thread_id": conversation.id},
            "metadata": {"conversation_id": conversation.id},
            "run_name": "conversation",
        }
        graph_input = {"question": question, "conversation_id": conversation.id}
        conversation.turn_active = True
        conversation.task = self.engine.submit(self._run(conversation, graph_input, config))

    async def _run(self, conversation: Conversation, graph_input: dict, config: dict) -> None:
        """One turn, on the engine's thread (see engine.py)."""
        record = outcome = None
        try:
            record = self._start_record(conversation.id, graph_input["question"])
            outcome = await run_turn(conversation, self.graph, graph_input, config, resolve_image=self.resolve,
                                     source_url_template=self.settings.source_url_template,
                                     turn_number=record.turn if record is not None else None)
        finally:
            try:
                self.checkpointer.trim_thread(conversation.id)
                if conversation.evicted:
                    self.checkpointer.delete_thread(conversation.id)
            except Exception:  # the answer is out; a checkpoint store that is down is reported elsewhere
                log.exception("could not tidy the checkpoints of conversation %s", conversation.id)
            try:
                self._finish_record(record, outcome, conversation.cancel_reason, config["configurable"].get("labels"))
            finally:
                # Only now do the readers' streams end: a reader that has read the turn to its end
                # finds it stored (its record, for feedback and `fieldguide gaps`, and its checkpoint).
                conversation.turn_ended()
            if self.release_policy.turn_finished():  # never idle: release every so many turns
                release_memory()

    def _start_record(self, conversation_id: str, question: str):
        try:
            return self.state.turns.start(conversation_id, question)
        except Exception:  # the reader still gets the answer; the record is what is lost
            log.exception("could not record the turn of conversation %s", conversation_id)
            return None

    def _finish_record(self, record, outcome, cancel_reason: str | None, labels=None) -> None:
        if record is None:
            return
        try:
            if outcome is None:
                record = record.finish("error", error=cancel_reason or "the answer was cancelled")
            else:
                final = self._with_question_vector(self._with_freshness(outcome.final), outcome.query_vector)
                final = self._with_labels(final, labels)
                record = record.finish(outcome.status, final, outcome.error)
            self.state.turns.finish(record)
        except Exception:
            log.exception("could not store the turn of conversation %s", record.conversation_id)

    def _with_labels(self, final: dict | None, labels) -> dict | None:
        """The final state with the doc sets the question was limited to (the default set when it
        named none), so the gap report can be made per label."""
        from fieldguide.labels import parse_labels

        chosen = labels or parse_labels(self.settings.labels)
        return {**(final or {}), "labels": list(chosen)} if chosen else final

    def _with_freshness(self, final: dict | None) -> dict | None:
        """The final state with what freshness needs: the index version it was answered from
        and its cited sections (`fieldguide.freshness`)."""
        if not final or final.get("abstain"):
            return final
        from fieldguide.freshness import cited_sections

        extra = {"sections": cited_sections(final)}
        version = final.get("index_version") or self.index_version()
        if version:
            extra["index_version"] = version
        return {**final, **extra}

    def _with_question_vector(self, final: dict | None, vector: list[float] | None) -> dict | None:
        """The final state with the standalone question's vector in the stored form
        (`fieldguide.embedding.question_vector_record`), named by the vector space of the
        configured embedding model; unchanged when the turn made no vector."""
        if not vector:
            return final
        from fieldguide.embedding import question_vector_record, question_vector_space

        if self._vector_space is None:
            self._vector_space = question_vector_space(self.settings)
        return {**(final or {}), "question_vector": question_vector_record(self._vector_space, vector)}

    def index_version(self) -> str | None:
        """The index's version (digest of its file manifest), read at most every
        INDEX_VERSION_SECONDS so a re-ingest shows up without a read per turn; None without a store."""
        store = getattr(self.resources, "store", None) if self.resources is not None else None
        if store is None or not hasattr(store, "index_files"):
            return None
        now = time.monotonic()
        cached = self._index_version
        if cached is not None and now - cached[0] < INDEX_VERSION_SECONDS:
            return cached[1]
        from fieldguide.freshness import index_version

        try:
            version = index_version(store.index_files()) or None
        except Exception:  # the store is down: the turn is stored without a version
            log.warning("could not read the index version")
            return cached[1] if cached else None
        self._index_version = (now, version)
        return version

    # -- housekeeping -----------------------------------------------------------------------
    def sweep(self) -> None:
        now = time.monotonic()
        limit = self.settings.abandon_after_seconds
        for conversation in self.conversations:
            if not conversation.running or conversation.unheard_for(now) <= limit:
                continue
            if not conversation.turn_active:  # accepted, but never started
                conversation.append("error", {"message": "the answer could not be started"})
                conversation.turn_ended()
                continue
            conversation.cancel_turn(f"the answer was cancelled: nobody listened for {limit:g} s")
        self.conversations.evict_expired(now)
        if now - self._tidied_at >= HOUSEKEEPING_SECONDS:
            self._tidied_at = now
            self.state.tidy()
        if self.release_policy.idle_due(self.conversations.running_count(), now):
            release_memory()

    async def janitor(self) -> None:
        interval = max(0.05, min(1.0, self.settings.abandon_after_seconds / 4,
                                 self.settings.event_log_ttl_seconds / 4))
        complained = 0.0
        while True:
            await asyncio.sleep(interval)
            try:
                await self.with_state(self.sweep)
            except StateUnavailable as exc:  # it tries again next round; say so now and then
                if time.monotonic() - complained > 30:
                    complained = time.monotonic()
                    log.warning("janitor: %s", exc)
            except Exception:  # housekeeping must never stop
                log.exception("janitor sweep failed")

    async def shutdown(self) -> None:
        for conversation in self.conversations:
            conversation.cancel_turn("the service is shutting down")
        await self.engine.stop()  # lets the cancelled turns write their error events first
        self.state.close()
        if self.resources is not None and hasattr(self.resources, "close"):
            self.resources.close()

    def model_status(self) -> dict | None:
        """The local model process's state for /readyz (None for an endpoint or a test double)."""
        describe = getattr(self.resources, "model_status", None)
        return describe() if callable(describe) else None

    async def ready(self) -> str | None:
        now = time.monotonic()
        if self._ready_cache and now - self._ready_cache[0] < READINESS_CACHE_SECONDS:
            return self._ready_cache[1]
        def check() -> str | None:
            return self.state.ready() or self.readiness()

        try:
            reason = await asyncio.wait_for(asyncio.to_thread(check), READINESS_TIMEOUT)
            if reason is None and self.describe_index is not None:
                self.index_description = await asyncio.wait_for(asyncio.to_thread(self.describe_index),
                                                                  READINESS_TIMEOUT)
        except asyncio.TimeoutError:
            reason = f"the store did not answer within {READINESS_TIMEOUT:g} s"
        self._ready_cache = (time.monotonic(), reason)
        return reason


def create_app(settings: Settings | None = None, graph_factory: GraphFactory | None = None, *,
               readiness: ReadinessCheck | None = None, configurable: dict[str, Any] | None = None,
               docs_dir: Path | None = None, langserve: bool = True) -> FastAPI:
    """Build the service.

    graph_factory(checkpointer=...) returns the compiled graph (default: the query graph
    with shared `graph.resources.Resources`); `configurable` is added to every run's config;
    `readiness` replaces the store probe; `docs_dir` (default `settings.docs_dir`) is
    served under /docs-assets/ for screenshots and source links.
    """
    settings = settings or get_settings()
    service = open_service(settings, graph_factory, readiness, configurable)
    app = FastAPI(title="fieldguide", summary="Answers from the product's own documentation.",
                  lifespan=service_lifespan(service))
    app.state.service = service

    @app.exception_handler(StateUnavailable)
    async def state_unavailable(request: Request, exc: StateUnavailable) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "2"})

    add_conversation_routes(app, service)
    add_health_routes(app, service)
    add_other_routes(app, service, docs_dir=docs_dir if docs_dir is not None else settings.docs_dir,
                     langserve=langserve)
    return app


def open_service(settings: Settings, graph_factory: GraphFactory | None, readiness: ReadinessCheck | None,
                 configurable: dict[str, Any] | None) -> Service:
    """The state opened, the graph built and the `Service` the routes share (see `create_app`)."""
    from fieldguide.service.console import console_token
    from fieldguide.service.handoff import Handoff, HandoffWorker, targets_from_settings

    # Settings that are wrong stop the service before it takes hold of anything (the state file's lock).
    targets = targets_from_settings(settings)
    console_token(settings)
    state = open_state(settings)
    resources = None
    configurable = dict(configurable or {})
    retrieval_graph = None  # a stand-in graph (tests) serves searches with its own final state
    if graph_factory is None:
        graph_factory = default_graph_factory
        retrieval_graph = default_retrieval_graph()
        if "resources" not in configurable:
            from graph.resources import Resources

            resources = Resources(settings)
            configurable["resources"] = resources
    else:
        resources = configurable.get("resources")
    graph = graph_factory(checkpointer=state.checkpointer)
    service = Service(
        settings=settings,
        graph=graph,
        state=state,
        readiness=readiness or store_readiness(settings, resources),
        configurable=configurable,
        resources=resources,
        describe_index=None if readiness else index_calibration(settings, resources),
    )
    worker = HandoffWorker(state.outbox, targets, settings) if targets.configured else None
    service.handoff = Handoff(targets, worker)
    if worker is not None:
        service.lifespans.append(worker.running)
    service.runner = GraphRunner(graph=graph, retrieval_graph=retrieval_graph or graph, configurable=configurable,
                                 engine=service.engine, checkpointer=state.checkpointer)
    return service


def service_lifespan(service: Service):
    """The app's lifespan: the janitor and `service.lifespans` while it serves, then shutdown."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        # Turns run on their own thread (engine.py): a shorter switch interval makes a
        # request wait less for the interpreter while answers are being produced.
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        settle_heap()
        janitor = asyncio.create_task(service.janitor())
        try:
            async with contextlib.AsyncExitStack() as stack:
                for enter in service.lifespans:
                    await stack.enter_async_context(enter())
                yield
        finally:
            janitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await janitor
            await service.shutdown()

    return lifespan


def add_other_routes(app: FastAPI, service: Service, docs_dir: Path, langserve: bool) -> None:
    """Search, the chat page and its assets, /rag, the console, /v1, /mcp, the widget; the origin policy."""
    settings = service.settings
    from fieldguide.service.search_routes import add_search_routes
    from fieldguide.service.web import add_web_routes

    add_search_routes(app, service)
    add_web_routes(app, settings, docs_dir=docs_dir, label_root=service.doc_sets.root)
    if langserve:
        from fieldguide.service.rag import add_rag_routes

        add_rag_routes(app, service.graph, configurable=service.configurable, settings=settings)
    from fieldguide.service.mcp_server import add_mcp_routes
    from fieldguide.service.openai_api import add_openai_routes
    from fieldguide.service.origins import OriginPolicy, parse_origins
    from fieldguide.service.widget import add_widget_routes

    from fieldguide.service.console import add_console_routes

    add_console_routes(app, service)
    add_openai_routes(app, service)
    add_mcp_routes(app, service, docs_dir=docs_dir)
    add_widget_routes(app, settings)
    app.add_middleware(OriginPolicy, allowed=parse_origins(settings.allowed_origins))
