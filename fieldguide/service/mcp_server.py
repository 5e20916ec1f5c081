"""The MCP server: fieldguide's index for coding agents (official `mcp` SDK).

Tools:
    search_docs(query, k, labels)  the best k chunks: breadcrumb, source, line range, URL, score, text
    ask(question, labels)          a grounded answer with its citations (the whole pipeline)

`labels` limits either to those doc sets (versions, products; default: the server's default set,
`--label` / FIELDGUIDE_LABELS, else every set); an unknown label is a tool error. search_docs
ranks as the pipeline does, and so as `GET /search` does for a finished query (the same search,
threshold and scorer; /search reads an unfinished last word differently, see
`fieldguide.section_search`).
Resources:
    fieldguide://docs/{path}  every Markdown file of the docs folder, as written

`fieldguide mcp` serves it over stdio, or streamable HTTP with `--http PORT`; the HTTP service
mounts the same server at `/mcp`. Runs go through a `GraphRunner`, so inside the service they
share its turn engine, models and store.
"""
# No `from __future__ import annotations`: the tools' signatures use types built per server (bounds
# from the settings), which the SDK must see as objects, not as names to look up later.

import logging
from pathlib import Path
from typing import Annotated, Any, Callable

from pydantic import BaseModel, Field

from fieldguide.retrieval import coverage_of
from fieldguide.service.answers import citations_for, search_hits
from fieldguide.service.runs import GraphRunner

log = logging.getLogger("fieldguide.mcp")

RESOURCE_PREFIX = "fieldguide://docs/"
SERVER_INSTRUCTIONS = (
    "Answers questions about a product from its own Markdown documentation. Use search_docs to find "
    "the sections that cover a topic (each hit names its file, heading path and lines), ask for a "
    "grounded answer with citations, and read a whole file through its fieldguide://docs/ resource.")


class SearchHit(BaseModel):
    chunk_id: str | None
    source: str | None
    heading_path: list[str]
    page_title: str = Field("", description="The page's title when only its front matter has one (no H1): "
                                            "the breadcrumb's first crumb.")
    breadcrumb: str = Field(description="The page title (when only front matter has it) and the heading path "
                                        "as one line, top first.")
    line_start: int | None = Field(description="First line of the source file the chunk covers (1-based).")
    line_end: int | None = Field(description="Last line of the source file the chunk covers (inclusive).")
    url: str | None = Field(description="Where a reader opens the source file (relative to the service "
                                        "unless a base URL is configured); None when nothing serves it.")
    resource: str | None = Field(description="The file as an MCP resource of this server.")
    score: float | None = Field(description="Rerank score (the pipeline's ranking).")
    similarity: float | None = Field(description="Cosine similarity to the query.")
    label: str | None = Field(None, description="The doc set (version, product) the section belongs to.")
    text: str


class SearchResult(BaseModel):
    query: str
    hits: list[SearchHit]
    found: bool = Field(description="False when no chunk passed the pipeline's filters.")
    nearest: list[dict[str, Any]] = Field(default_factory=list,
                                          description="The closest sections when nothing passed, by similarity.")


class AskResult(BaseModel):
    answer: str = Field(description="Markdown; may carry citation markers like [1].")
    abstain: bool = Field(description="True when the documentation does not cover the question.")
    coverage: str = Field("covered", description="covered (the answer stands on the docs), partial (the quotes are "
                          "only the closest the docs come; the answer says so) or not_covered (the abstention).")
    coverage_reason: str = Field("", description="Why, in a few words.")
    intent: str | None
    citations: list[dict[str, Any]] = Field(
        description="n, chunk_id, source, heading_path, page_title, line_start, line_end, url (and resource) "
                    "per cited section.")
    standalone_question: str | None = None


def resource_uri(source: str | None) -> str | None:
    return RESOURCE_PREFIX + source if source else None


class DocsFolder:
    """The Markdown files of a docs folder, read safely: only files under it, as text."""

    def __init__(self, root: Path | None):
        self.root = Path(root).resolve() if root else None

    def sources(self) -> list[str]:
        if self.root is None or not self.root.is_dir():
            return []
        from ingest.chunker import iter_markdown_files

        return [p.relative_to(self.root).as_posix() for p in iter_markdown_files(self.root)]

    def read(self, source: str) -> str:
        from mcp.server.mcpserver.exceptions import ResourceNotFoundError

        from ingest.chunker import MARKDOWN_SUFFIXES

        if self.root is None:
            raise ResourceNotFoundError("no docs folder is configured (--docs or FIELDGUIDE_DOCS_DIR)")
        target = (self.root / source).resolve()
        if (not target.is_relative_to(self.root) or target.suffix.lower() not in MARKDOWN_SUFFIXES
                or not target.is_file()):
            raise ResourceNotFoundError(f"no Markdown file {source!r} in the docs folder")
        from ingest.markdown import decode_markdown

        text, _warnings = decode_markdown(target.read_bytes(), source)
        return text


def build_mcp_server(runner: GraphRunner, settings, *, docs_dir: Path | None = None,
                     resolve: Callable[[str], str | None] = lambda source: None, own_logging: bool = True,
                     doc_sets=None):
    """The MCP server over `runner`. `resolve(source)` is a docs file's URL for readers.
    `doc_sets` (`search_routes.DocSets`) checks the labels a call names; default: over the runner's resources.
    `own_logging=False` keeps the SDK from configuring the process's root logger (it does when
    nothing has yet), which is the host's to configure (the HTTP service's)."""
    server = _new_server(own_logging)
    docs = DocsFolder(docs_dir)
    if doc_sets is None:
        from fieldguide.service.search_routes import DocSets

        doc_sets = DocSets(runner.configurable.get("resources"), settings)
    _add_tools(server, runner, settings, doc_sets, resolve)
    _add_docs_resources(server, docs)
    return server


def _new_server(own_logging: bool):
    """The SDK's server; `own_logging=False`: without configuring the root logger (see `build_mcp_server`)."""
    from mcp.server import MCPServer

    root = logging.getLogger()
    placeholder = None if own_logging or root.handlers else logging.NullHandler()
    if placeholder is not None:
        root.addHandler(placeholder)  # logging.basicConfig does nothing while root has a handler
    try:
        server = MCPServer("fieldguide", instructions=SERVER_INSTRUCTIONS, version=_version(), log_level="WARNING")
    finally:
        if placeholder is not None:
            root.removeHandler(placeholder)
    return server


def _add_tools(server, runner: GraphRunner, settings, doc_sets, resolve: Callable[[str], str | None]) -> None:
    """The tools: search_docs and ask, their arguments bounded by `settings`, their labels checked by `doc_sets`."""
    from mcp.server.mcpserver.exceptions import ToolError

    from graph.options import InvalidOption

    Labels = Annotated[list[str] | None, Field(
        None, max_length=50, description="Doc sets (labels: versions, products) to limit to; default: the "
        "server's default set, else every set.")]

    def label_options(labels: list[str] | None) -> dict:
        from fieldguide.labels import InvalidLabel

        try:
            checked = doc_sets.checked(labels) if labels else None
        except InvalidLabel as exc:
            raise ToolError(str(exc)) from None
        return {"labels": checked} if checked else {}
    Question = Annotated[str, Field(min_length=1, max_length=settings.max_question_chars,
                                    description="A question in plain words.")]
    Count = Annotated[int, Field(ge=1, le=settings.public_max_chunks,
                                 description=f"How many chunks to return (1-{settings.public_max_chunks}).")]

    def link(source: str) -> str | None:
        return resolve(source) if source else None

    def clean(text: str, what: str) -> str:
        text = " ".join((text or "").split())
        if not text:
            raise ToolError(f"the {what} is empty")
        return text

    @server.tool(structured_output=True)
    async def search_docs(query: Question, k: Count = 5, labels: Labels = None) -> SearchResult:
        """Search the documentation: the k best-matching sections, best first, each with its
        breadcrumb, source file, line range, URL and score. Nothing passes when the docs do not
        cover the query; the nearest sections are named instead. `labels` limits the search to
        those doc sets (versions, products)."""
        query = clean(query, "query")
        options = label_options(labels)
        try:
            state = await runner.retrieve(query, {"max_chunks": k, **options})
        except InvalidOption as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:
            raise ToolError(_failure(exc)) from None
        hits = [SearchHit(**hit, resource=resource_uri(hit["source"])) for hit in search_hits(state, k, link)]
        return SearchResult(query=query, hits=hits, found=bool(hits), nearest=list(state.get("nearest") or []))

    @server.tool(structured_output=True)
    async def ask(question: Question, labels: Labels = None) -> AskResult:
        """Ask the documentation a question: a grounded answer in Markdown and the sections it
        cites. When the docs do not cover it, the answer says so (abstain) and names the nearest
        sections instead of guessing. `labels` limits it to those doc sets (versions, products)."""
        question = clean(question, "question")
        options = label_options(labels)
        try:
            final = await runner.answer(question, options)
        except Exception as exc:
            raise ToolError(_failure(exc)) from None
        citations = citations_for(final, link)
        for citation in citations:
            citation.setdefault("resource", resource_uri(citation.get("source")))
        return AskResult(answer=final.get("answer", ""), abstain=bool(final.get("abstain", False)),
                         coverage=coverage_of(final), coverage_reason=final.get("coverage_reason") or "",
                         intent=final.get("intent"), citations=citations,
                         standalone_question=final.get("standalone_question"))


def _add_docs_resources(server, docs: DocsFolder) -> None:
    """Each docs file as a resource, and the template that reads any of them by path."""
    from mcp.server.mcpserver.resources.types import FunctionResource

    @server.resource(RESOURCE_PREFIX + "{+path}", name="docs-file", mime_type="text/markdown",
                     description="A Markdown file of the documentation, as written.")
    def docs_file(path: str) -> str:
        return docs.read(path)

    for source in docs.sources():
        server.add_resource(FunctionResource(
            uri=resource_uri(source), name=source, title=source, mime_type="text/markdown",
            description=f"Documentation file {source}", fn=lambda source=source: docs.read(source)))


def add_mcp_routes(app, service, *, docs_dir: Path | None) -> None:
    """Mount the MCP server at `/mcp` (streamable HTTP) over the service's runner."""
    from mcp.server.transport_security import TransportSecuritySettings

    server = build_mcp_server(service.runner, service.settings, docs_dir=docs_dir, resolve=service.resolve,
                              own_logging=False, doc_sets=service.doc_sets)
    # Browsers are checked for the whole service (origins.py); the SDK's own Host check would need
    # the public host names, which the service does not know.
    http_app = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    app.router.routes.extend(http_app.routes)
    service.lifespans.append(server.session_manager.run)


def _failure(exc: BaseException) -> str:
    from fieldguide.errors import FieldguideError

    if isinstance(exc, FieldguideError):
        return str(exc)
    log.exception("an MCP tool call failed")
    return f"the pipeline failed: {type(exc).__name__}"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fieldguide")
    except PackageNotFoundError:
        return "0"
