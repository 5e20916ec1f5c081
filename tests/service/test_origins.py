"""FIELDGUIDE_ALLOWED_ORIGINS: which browser pages may call the API (service/origins.py)."""
from __future__ import annotations

import httpx
import pytest

from fieldguide.service.origins import parse_origins
from fieldguide_testing.serving import make_app

DOCS_SITE = "https://docs.example.com"


@pytest.fixture
def guarded(server_for):
    app = make_app(allowed_origins=f"{DOCS_SITE}, http://localhost:3000/")
    return server_for(app), app


def test_origins_are_read_as_a_comma_separated_list():
    assert parse_origins(" https://A.example.com/ ,http://localhost:3000,, ") == {
        "https://a.example.com", "http://localhost:3000"}
    assert parse_origins("") == frozenset()


def test_requests_without_an_origin_and_from_our_own_pages_pass(guarded):
    base, _ = guarded
    assert httpx.get(base + "/healthz").status_code == 200
    own = httpx.post(base + "/conversations", json={"question": "Which fields?"}, headers={"Origin": base})
    assert own.status_code == 202 and "access-control-allow-origin" not in own.headers


def test_a_listed_origin_gets_cors_headers_and_its_preflight_answered(guarded):
    base, _ = guarded
    preflight = httpx.options(base + "/conversations", headers={
        "Origin": DOCS_SITE, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == DOCS_SITE
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert preflight.headers["access-control-allow-headers"] == "content-type"
    started = httpx.post(base + "/conversations", json={"question": "Which fields?"}, headers={"Origin": DOCS_SITE})
    assert started.status_code == 202
    assert started.headers["access-control-allow-origin"] == DOCS_SITE and started.headers["vary"] == "Origin"
    with httpx.stream("GET", base + started.json()["stream_url"], headers={"Origin": DOCS_SITE}) as stream:
        assert stream.headers["access-control-allow-origin"] == DOCS_SITE
        assert "event: done" in stream.read().decode()
    trailing_slash_listed = httpx.get(base + "/v1/models", headers={"Origin": "http://localhost:3000"})
    assert trailing_slash_listed.status_code == 200


@pytest.mark.parametrize("method, path", [("POST", "/conversations"), ("POST", "/v1/chat/completions"),
                                          ("GET", "/v1/models"), ("POST", "/mcp"), ("POST", "/rag/invoke")])
def test_an_unlisted_origin_is_refused_before_anything_runs(guarded, method, path):
    base, app = guarded
    response = httpx.request(method, base + path, json={"question": "Which fields?"},
                             headers={"Origin": "https://evil.example.net"})
    assert response.status_code == 403
    assert "FIELDGUIDE_ALLOWED_ORIGINS" in response.json()["detail"]
    assert len(app.state.service.conversations) == 0
    preflight = httpx.options(base + path, headers={"Origin": "https://evil.example.net",
                                                    "Access-Control-Request-Method": method})
    assert preflight.status_code == 403 and "access-control-allow-origin" not in preflight.headers


def test_a_star_allows_any_origin(server_for):
    base = server_for(make_app(allowed_origins="*"))
    response = httpx.get(base + "/v1/models", headers={"Origin": "https://anywhere.example.org"})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "https://anywhere.example.org"
