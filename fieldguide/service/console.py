"""The docs team's console: `GET /console` and its JSON and CSV API under `/console/api/`.

    GET /console                        the page (charts drawn by Chart.js from the API below)
    GET /console/api/summary            totals of the window, and what is configured
    GET /console/api/questions[.csv]    questions per day          (analytics.questions_per_day)
    GET /console/api/coverage[.csv]     coverage verdicts per day  (analytics.coverage_per_day)
    GET /console/api/feedback[.csv]     thumbs up and down per day (analytics.feedback_per_day)
    GET /console/api/handoffs[.csv]     support requests per day   (analytics.handoffs_per_day)
    GET /console/api/gaps[.csv]         the top gap clusters and their file#heading tasks (fieldguide.gaps)
    GET /console/api/stale[.csv]        stored answers whose cited sections changed (fieldguide.freshness)

Each takes `days` (1-366, default 30: that many UTC days up to today); gaps also `top`.

Readers' questions are personal data, so:

* the console exists only when `FIELDGUIDE_CONSOLE_TOKEN` is set: without it every /console
  route is 404;
* every /console route wants `Authorization: Bearer <token>`, compared in constant time
  (`hmac.compare_digest`); without it, or with another token, 401 and no data. The token is read
  from that header only: never from a query string, a cookie or a form, so it is in no URL, log
  line or browser history;
* the page itself holds no data. A browser's navigation cannot send the header, so `/console`
  answers 401 with the page shell: it asks for the token, keeps it in the tab's sessionStorage
  and calls the API with the header;
* no /console route is ever served to another origin: origins.py refuses them to every
  cross-origin browser request, the widget's FIELDGUIDE_ALLOWED_ORIGINS included, and adds no
  CORS header, so no docs site's page can read them;
* responses are `Cache-Control: no-store`.
"""
from __future__ import annotations

import asyncio
import hmac
import logging
import time
from typing import Any, Callable

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from fieldguide.errors import FieldguideError
from fieldguide.service import analytics
from fieldguide.service.assets import WEB_DIR

log = logging.getLogger("fieldguide.service")

TOKEN_MIN_CHARS = 16
DEFAULT_DAYS = 30
DEFAULT_TOP = 10
MAX_TOP = 50
GAPS_CACHE_SECONDS = 300.0  # the gap report embeds and searches: computed at most this often per window
REALM = 'Bearer realm="fieldguide console"'
PRIVATE_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                   "X-Frame-Options": "DENY"}
PAGE_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
               "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

SERIES_COLUMNS = {
    "questions": ("day", "questions", "conversations", "errors"),
    "coverage": ("day",) + analytics.VERDICTS,
    "feedback": ("day", "up", "down"),
    "handoffs": ("day", "requests", "delivered", "pending", "failed"),
}
# A service built around a stand-in graph (tests, benchmarks) has no index of its own: the charts
# that read the index say so instead of opening one from the settings.
NO_INDEX = "this service has no index attached: the gaps and stale answers need the one it answers from"
GAP_COLUMNS = ("kind", "count", "question", "questions", "tasks", "action", "reason")
STALE_COLUMNS = ("turn", "question", "index_version", "section", "change")


def console_token(settings) -> str | None:
    """The configured token (None: the console is off); a short one is refused."""
    secret = settings.console_token
    token = secret.get_secret_value().strip() if secret is not None else ""
    if not token:
        return None
    if len(token) < TOKEN_MIN_CHARS:
        raise FieldguideError(f"FIELDGUIDE_CONSOLE_TOKEN is shorter than {TOKEN_MIN_CHARS} characters: use a long "
                              "random one, e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`")
    return token


def bearer_matches(authorization: str | None, token: str) -> bool:
    """Whether an Authorization header carries `Bearer <token>`: compared in constant time, and
    compared even when the header is missing or of another scheme (no shortcut to time)."""
    scheme, _, given = (authorization or "").strip().partition(" ")
    same = hmac.compare_digest(given.strip().encode("utf-8"), token.encode("utf-8"))
    return same and scheme.lower() == "bearer"


def _private(response: Response) -> Response:
    response.headers.update(PRIVATE_HEADERS)
    return response


def _unauthorized() -> Response:
    return _private(JSONResponse({"detail": "the console needs Authorization: Bearer <FIELDGUIDE_CONSOLE_TOKEN>"},
                                 status_code=401, headers={"WWW-Authenticate": REALM}))


def _bad(message: str) -> Response:
    return _private(JSONResponse({"detail": message}, status_code=422))


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number between {low} and {high}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}")
    return value


class ConsoleData:
    """Reads the service's state for the console; every read runs in a worker thread."""

    def __init__(self, service, settings) -> None:
        self.service = service
        self.settings = settings
        self._gaps: dict[int, tuple[float, Any, str]] = {}  # days -> (computed at, report, last day)
        self._gaps_lock = asyncio.Lock()

    @property
    def state(self):
        return self.service.state

    async def records(self, since: float, wanted: tuple[str, ...] = ("turns", "feedback", "deliveries")) -> tuple:
        """(turns, votes, deliveries) since `since`, each read only when `wanted` (else empty): the
        store's light facts where it has them (SQLite), else whole records."""
        store = self.state.turns

        def read():
            turns = votes = deliveries = []
            if "turns" in wanted:
                light = getattr(store, "turn_facts_since", None)
                turns = light(since) if light else list(store.turns_since(since))
            if "feedback" in wanted:
                light = getattr(store, "vote_facts_since", None)
                votes = light(since) if light else list(store.feedback_since(since))
            if "deliveries" in wanted:
                deliveries = list(self.state.outbox.deliveries(since))
            return turns, votes, deliveries

        return await asyncio.to_thread(read)

    async def series(self, name: str, days: int, now: float) -> dict:
        since, day_list = analytics.window(days, now)
        wanted = {"questions": "turns", "coverage": "turns", "feedback": "feedback"}.get(name, "deliveries")
        turns, feedback, deliveries = await self.records(since, (wanted,))
        if name == "questions":
            rows = analytics.questions_per_day(turns, day_list)
        elif name == "coverage":
            rows = analytics.coverage_per_day(turns, day_list)
        elif name == "feedback":
            rows = analytics.feedback_per_day(feedback, day_list)
        else:
            rows = analytics.handoffs_per_day(deliveries, day_list)
        columns = SERIES_COLUMNS[name]
        return {"from": day_list[0], "to": day_list[-1], "rows": rows, "totals": analytics.totals(rows, columns[1:])}

    async def summary(self, days: int, now: float) -> dict:
        since, day_list = analytics.window(days, now)
        turns, feedback, deliveries = await self.records(since)
        questions = analytics.totals(analytics.questions_per_day(turns, day_list), SERIES_COLUMNS["questions"][1:])
        coverage = analytics.totals(analytics.coverage_per_day(turns, day_list), analytics.VERDICTS)
        votes = analytics.totals(analytics.feedback_per_day(feedback, day_list), ("up", "down"))
        handoffs = analytics.totals(analytics.handoffs_per_day(deliveries, day_list), SERIES_COLUMNS["handoffs"][1:])
        handoff = self.service.handoff
        return {"from": day_list[0], "to": day_list[-1], "questions": questions, "coverage": coverage,
                "feedback": votes, "handoffs": handoffs,
                "handoff_targets": handoff.targets.names() if handoff is not None else []}

    async def gaps(self, days: int, top: int, now: float) -> dict:
        since, day_list = analytics.window(days, now)
        async with self._gaps_lock:  # one report at a time; a second request waits for the first's
            cached = self._gaps.get(days)
            if cached is None or now - cached[0] >= GAPS_CACHE_SECONDS or cached[2] != day_list[-1]:
                report = await asyncio.to_thread(self._gap_report, since)
                cached = (now, report, day_list[-1])
                self._gaps[days] = cached
        report = cached[1]
        return {"from": day_list[0], "to": day_list[-1], "computed_at": cached[0],
                "turns": report.summary.turns, "problem_turns": len(report.summary.problems),
                "clusters": analytics.gap_rows(report, top)}

    def _gap_report(self, since: float):
        from fieldguide.gaps import problem_turns, report_for

        turns = self.state.turns
        summary = problem_turns(turns.turns_since(since), turns.feedback_since(0.0), since)
        if summary.problems and self.service.resources is None:
            raise FieldguideError(NO_INDEX)
        return report_for(summary, self.settings, None, self.service.resources)

    async def stale(self, days: int, now: float) -> dict:
        since, day_list = analytics.window(days, now)
        version, stale = await asyncio.to_thread(self._stale, since)
        answers, by_source = analytics.stale_rows(stale)
        return {"from": day_list[0], "to": day_list[-1], "index_version": version, "answers": answers,
                "by_source": by_source}

    def _stale(self, since: float) -> tuple[str, list[dict]]:
        records = list(self.state.turns.turns_since(since))
        if self.service.resources is None:
            raise FieldguideError(NO_INDEX)
        return self._stale_in(self.service.resources.store, records, since)

    @staticmethod
    def _stale_in(store, records, since) -> tuple[str, list[dict]]:
        from fieldguide.freshness import index_version, stale_answers

        if store.manifest() is None:
            raise FieldguideError("the collection holds no index yet: run `fieldguide ingest DOCS_DIR` first")
        current = index_version(store.file_records())
        return current, stale_answers(records, current, store.texts, since)


def _csv(text: str, name: str, days: int) -> Response:
    return _private(Response(text, media_type="text/csv; charset=utf-8", headers={
        "Content-Disposition": f'attachment; filename="fieldguide-{name}-{days}d.csv"'}))


def _guarded(token: str, handler: Callable) -> Callable:
    """`handler(days=, top=, now=)` as a route: the token checked, days and top read from the query,
    a failure to read the data answered 503."""
    async def route(request: Request) -> Response:
        if not bearer_matches(request.headers.get("authorization"), token):
            return _unauthorized()
        try:
            days = _int_param(request, "days", DEFAULT_DAYS, 1, analytics.MAX_DAYS)
            top = _int_param(request, "top", DEFAULT_TOP, 1, MAX_TOP)
        except ValueError as exc:
            return _bad(str(exc))
        try:
            return await handler(days=days, top=top, now=time.time())
        except FieldguideError as exc:  # the index or the state is not there to read
            log.warning("console: %s", exc)
            return _private(JSONResponse({"detail": str(exc)}, status_code=503))
        except Exception as exc:
            log.exception("console: %s failed", request.url.path)
            return _private(JSONResponse({"detail": f"could not read the data ({type(exc).__name__})"},
                                         status_code=503))
    return route


def add_console_routes(app: FastAPI, service) -> None:
    """The console's routes, when FIELDGUIDE_CONSOLE_TOKEN is set (none otherwise: 404)."""
    settings = service.settings
    token = console_token(settings)
    if token is None:
        return
    data = ConsoleData(service, settings)
    shell = (WEB_DIR / "console.html").read_text(encoding="utf-8").encode("utf-8")

    @app.get("/console", include_in_schema=False)
    async def console_page(request: Request) -> Response:
        # The same shell either way (it holds no data): 401 tells a browser without the header
        # what it is; the page's script asks for the token and calls the API with it.
        allowed = bearer_matches(request.headers.get("authorization"), token)
        response = HTMLResponse(shell, status_code=200 if allowed else 401,
                                headers={"Content-Security-Policy": PAGE_POLICY})
        if not allowed:
            response.headers["WWW-Authenticate"] = REALM
        return _private(response)

    async def summary(days: int, top: int, now: float) -> Response:
        return _private(JSONResponse(await data.summary(days, now)))

    app.add_api_route("/console/api/summary", _guarded(token, summary), methods=["GET"], include_in_schema=False)

    for name in SERIES_COLUMNS:
        def routes(name: str = name):
            async def as_json(days: int, top: int, now: float) -> Response:
                return _private(JSONResponse(await data.series(name, days, now)))

            async def as_csv(days: int, top: int, now: float) -> Response:
                body = await data.series(name, days, now)
                return _csv(analytics.to_csv(SERIES_COLUMNS[name], body["rows"]), name, days)
            return as_json, as_csv

        as_json, as_csv = routes()
        app.add_api_route(f"/console/api/{name}", _guarded(token, as_json), methods=["GET"], include_in_schema=False)
        app.add_api_route(f"/console/api/{name}.csv", _guarded(token, as_csv), methods=["GET"], include_in_schema=False)

    async def gaps(days: int, top: int, now: float) -> Response:
        return _private(JSONResponse(await data.gaps(days, top, now)))

    async def gaps_csv(days: int, top: int, now: float) -> Response:
        body = await data.gaps(days, top, now)
        return _csv(analytics.to_csv(GAP_COLUMNS, body["clusters"]), "gaps", days)

    async def stale(days: int, top: int, now: float) -> Response:
        return _private(JSONResponse(await data.stale(days, now)))

    async def stale_csv(days: int, top: int, now: float) -> Response:
        body = await data.stale(days, now)
        rows = [{**a, **s} for a in body["answers"] for s in a["sections"]]
        return _csv(analytics.to_csv(STALE_COLUMNS, rows), "stale", days)

    for path, handler in (("gaps", gaps), ("gaps.csv", gaps_csv), ("stale", stale), ("stale.csv", stale_csv)):
        app.add_api_route(f"/console/api/{path}", _guarded(token, handler), methods=["GET"], include_in_schema=False)

    @app.api_route("/console/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)
    async def console_other(request: Request, rest: str) -> Response:
        # Anything else under /console: 401 before anything is said about what exists.
        if not bearer_matches(request.headers.get("authorization"), token):
            return _unauthorized()
        return _private(JSONResponse({"detail": "not found"}, status_code=404))
