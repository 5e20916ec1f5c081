"""Which web pages may call the API from a browser: `FIELDGUIDE_ALLOWED_ORIGINS`.

A browser names the page's origin in an `Origin` header on every cross-origin request (and on
same-origin POSTs). Requests without one (curl, SDK clients, agents) and requests from the
service's own pages pass untouched. A listed origin (the docs site that embeds the widget)
gets CORS headers, its preflights answered here. Any other origin is refused with 403 before
a route runs, so an unlisted page can neither read answers nor start work: a JSON POST from
it is stopped at its preflight, a simple one at the door.

Some routes are never for another origin, listed or not (`PRIVATE_PREFIXES`: the docs team's
console, which serves readers' questions): every cross-origin browser request to them, preflight
or not, is refused with 403 and no CORS header, so no page on another origin can read them.
"""
from __future__ import annotations

import json
import logging

log = logging.getLogger("fieldguide.service")

ALLOWED_METHODS = "GET, POST, DELETE, OPTIONS"
# What an MCP client must read back from a response.
EXPOSED_HEADERS = "mcp-session-id, mcp-protocol-version"
PREFLIGHT_MAX_AGE = "600"
# Paths served to the service's own pages only (and to clients that are not browsers).
PRIVATE_PREFIXES = ("/console",)


def parse_origins(value: str | None) -> frozenset[str]:
    """`"https://docs.example.com, http://localhost:3000"` -> normalised origins ("*": any)."""
    return frozenset(normalise(part) for part in (value or "").split(",") if part.strip())


def normalise(origin: str) -> str:
    return origin.strip().rstrip("/").lower()


def private_path(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in PRIVATE_PREFIXES)


def _authority(origin: str) -> str:
    return origin.split("://", 1)[1] if "://" in origin else origin


class OriginPolicy:
    """ASGI middleware enforcing the allowlist (see the module's docstring)."""

    def __init__(self, app, allowed: frozenset[str]):
        self.app = app
        self.allowed = allowed
        self.any = "*" in allowed

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        origin = headers.get("origin")
        if origin is None or _authority(normalise(origin)) == headers.get("host", "").lower():
            await self.app(scope, receive, send)  # not from a browser, or from our own pages
            return
        if private_path(scope["path"]):
            log.info("refused a %s %s from origin %s (never served to another origin)",
                     scope["method"], scope["path"], origin)
            await _respond(send, 403, {"detail": "this route is not served to other origins"})
            return
        allowed = self.any or normalise(origin) in self.allowed
        preflight = scope["method"] == "OPTIONS" and "access-control-request-method" in headers
        if not allowed:
            log.info("refused a %s %s from origin %s (not in FIELDGUIDE_ALLOWED_ORIGINS)",
                     scope["method"], scope["path"], origin)
            await _respond(send, 403, {"detail": f"origin {origin} may not call this API: "
                                                 "it is not in FIELDGUIDE_ALLOWED_ORIGINS"})
            return
        cors = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
        if preflight:
            # A listed origin may send the headers its client needs (the widget's Last-Event-ID,
            # an OpenAI or MCP client's own): the origin is what is trusted, not a header list.
            requested = headers.get("access-control-request-headers", "")
            await _respond(send, 204, None, cors + [
                (b"access-control-allow-methods", ALLOWED_METHODS.encode()),
                (b"access-control-allow-headers", requested.encode("latin-1")),
                (b"access-control-max-age", PREFLIGHT_MAX_AGE.encode())])
            return

        async def send_with_cors(message):
            if message["type"] == "http.response.start":
                message = dict(message)
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in
                        (b"access-control-allow-origin", b"access-control-expose-headers")]
                message["headers"] = kept + cors + [(b"access-control-expose-headers", EXPOSED_HEADERS.encode())]
            await send(message)

        await self.app(scope, receive, send_with_cors)


async def _respond(send, status: int, body: dict | None, headers: list | None = None) -> None:
    payload = json.dumps(body).encode() if body is not None else b""
    extra = [(b"content-type", b"application/json")] if body is not None else []
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(payload)).encode()), *extra, *(headers or [])]})
    await send({"type": "http.response.body", "body": payload})
