"""Instant search, doc set labels and llms.txt over HTTP.

    GET /search?q=...&limit=N&label=L   ranked sections, no generation (`fieldguide.section_search`)
    GET /labels                         the index's doc sets and the default set, for the page's choice
    GET /llms.txt, /llms-full.txt       the llms.txt convention over the ingested docs (`?label=`)

Searches run in a worker thread (the embedding and the store are blocking calls), never on the
loop that serves HTTP nor on the turn engine's thread. The doc sets the index holds are read at
most every LABELS_SECONDS; the llms.txt texts are kept until the manifest's ingest stamp
changes (each ingest that changes the index writes a new one).
"""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from fieldguide.labels import InvalidLabel, check_known, parse_labels
from fieldguide.section_search import (
    DEFAULT_LIMIT, MAX_LIMIT, InvalidQuery, QueryVectors, SearchIndex, clean_query, search_sections)
from fieldguide.source_links import source_url

LABELS_SECONDS = 5.0


def query_error(name: str, message: str, value: Any) -> RequestValidationError:
    return RequestValidationError([{"type": "value_error", "loc": ("query", name), "msg": message, "input": value}])


class DocSets:
    """The doc set labels the index holds, read at most every LABELS_SECONDS."""

    def __init__(self, resources, settings):
        self.resources = resources
        self.settings = settings
        self._known: tuple[float, dict[str, str | None]] | None = None
        self._lock = threading.Lock()

    def folders(self) -> dict[str, str | None]:
        """label -> the folder it was ingested from (as recorded)."""
        with self._lock:
            cached = self._known
            if cached is not None and time.monotonic() - cached[0] < LABELS_SECONDS:
                return cached[1]
        reader = getattr(self.resources.store, "known_labels", None) if self.resources is not None else None
        folders = dict(reader()) if reader else {}
        with self._lock:
            self._known = (time.monotonic(), folders)
        return folders

    def known(self) -> list[str]:
        return sorted(self.folders())

    def root(self, label: str):
        """The folder a labelled doc set's files are served from: the one it was ingested from,
        when it is on this machine; None otherwise."""
        from pathlib import Path

        folder = self.folders().get(label)
        return Path(folder).resolve() if folder and Path(folder).is_dir() else None

    def default(self) -> list[str]:
        return list(parse_labels(self.settings.labels) or ())

    def checked(self, requested) -> tuple[str, ...] | None:
        """The labels a request names (a list, or comma-separated strings), else the default set;
        InvalidLabel for a bad name or one the index does not hold."""
        named = parse_labels([part for item in requested or [] for part in str(item).split(",")])
        labels = named or parse_labels(self.settings.labels)
        if labels:
            check_known(labels, self.known())
        return labels


class InstantSearch:
    """`search_sections` over the service's resources: their store, embedding model, scorer and
    term statistics, with query vectors cached across requests."""

    def __init__(self, resources, settings):
        self.resources = resources
        self.settings = settings
        self._vectors: QueryVectors | None = None
        self._lock = threading.Lock()

    def index(self, labels) -> SearchIndex:
        resources = self.resources
        resources.check_manifest()
        with self._lock:
            if self._vectors is None:
                self._vectors = QueryVectors(resources.embeddings)
        store = resources.store.limited_to(labels) if labels else resources.store
        return SearchIndex(store=store, vectors=self._vectors, scorer=resources.reranker,
                           term_stats=resources.term_stats)

    def search(self, query: str, limit: int, labels) -> list[dict]:
        settings = self.settings
        template = settings.source_url_template

        def url_for(chunk: dict) -> str:
            return source_url(chunk.get("source") or "", chunk.get("line_start"), chunk.get("line_end"), template,
                              chunk.get("label"))

        return search_sections(query, self.index(labels), limit=limit, search_k=max(settings.search_k, limit),
                               min_similarity=settings.min_similarity, hybrid_alpha=settings.hybrid_alpha,
                               url_for=url_for)


class LlmsTexts:
    """llms.txt and llms-full.txt per doc set, made once per ingest stamp."""

    def __init__(self, resources, settings):
        self.resources = resources
        self.settings = settings
        self._cache: dict[tuple, tuple[str | None, str]] = {}
        self._lock = threading.Lock()

    def text(self, kind: str, label: str | None, base_url: str) -> str:
        from fieldguide import llms_txt

        store = self.resources.store
        stamp = (store.manifest() or {}).get("ingest_stamp") or ""
        key = (kind, label, base_url)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        pages = llms_txt.pages_from_chunks(store.iter_chunks([label] if label else None))
        template = self.settings.source_url_template

        def url_for(page) -> str:
            url = source_url(page.source, template=template, label=page.label)
            return base_url + url if url.startswith("/") else url

        title, summary = llms_txt.site_title(pages, "Documentation")
        if label:
            title = f"{title} ({label})"
        render = llms_txt.llms_full_txt if kind == "full" else llms_txt.llms_txt
        text = render(pages, url_for, title, summary)
        with self._lock:
            if len(self._cache) > 64:  # a few labels and hosts: never many
                self._cache.clear()
            self._cache[key] = (stamp, text)
        return text


def add_search_routes(app: FastAPI, service) -> None:
    settings = service.settings
    resources = service.resources
    doc_sets = DocSets(resources, settings)
    instant = InstantSearch(resources, settings) if resources is not None else None
    llms = LlmsTexts(resources, settings) if resources is not None else None
    service.doc_sets = doc_sets

    def no_index() -> JSONResponse:
        return JSONResponse({"detail": "this service has no index to search"}, status_code=503)

    @app.get("/search")
    async def search(q: str | None = None, limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT),
                     label: list[str] = Query(default=[])):
        """Ranked sections for a few typed words (no generation): title, breadcrumb, highlighted
        snippet (HTML), URL, score and doc set label of each, best first."""
        try:
            query = clean_query(q)
        except InvalidQuery as exc:
            raise query_error("q", str(exc), q) from None
        if instant is None:
            return no_index()
        try:
            # checking labels reads the store (cached for a few seconds): no thread hop when none is named
            labels = await asyncio.to_thread(doc_sets.checked, label) if label or settings.labels else None
        except InvalidLabel as exc:
            raise query_error("label", str(exc), label) from None
        results = await asyncio.to_thread(instant.search, query, limit, labels)
        return JSONResponse({"results": results}, headers={"Cache-Control": "no-store"})

    @app.get("/labels")
    async def labels() -> JSONResponse:
        """The doc sets (labels) the index holds and the default set questions are limited to."""
        known = await asyncio.to_thread(doc_sets.known) if resources is not None else []
        return JSONResponse({"labels": known, "default": doc_sets.default()})

    async def llms_response(request: Request, kind: str, label: str | None, media_type: str) -> Response:
        if llms is None:
            return no_index()
        try:
            checked = await asyncio.to_thread(doc_sets.checked, [label] if label else [])
        except InvalidLabel as exc:
            raise query_error("label", str(exc), label) from None
        if checked is not None and len(checked) > 1:
            raise query_error("label", "name one doc set", label)
        base = str(request.base_url).rstrip("/")
        text = await asyncio.to_thread(llms.text, kind, checked[0] if checked else None, base)
        return PlainTextResponse(text, media_type=media_type, headers={"Cache-Control": "public, max-age=60"})

    @app.get("/llms.txt")
    async def llms_index(request: Request, label: str | None = None) -> Response:
        return await llms_response(request, "index", label, "text/plain; charset=utf-8")

    @app.get("/llms-full.txt")
    async def llms_full(request: Request, label: str | None = None) -> Response:
        return await llms_response(request, "full", label, "text/markdown; charset=utf-8")
