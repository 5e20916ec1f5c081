"""The docs team's console (service/console.py): who may read it, and the numbers of every chart.

Charts are fed known turns, feedback and handoffs through the app's own state store (each
backend in turn), then read back over HTTP as JSON and as CSV."""
from __future__ import annotations

import csv
import io
from datetime import datetime, timezone

import httpx
import pytest

from fieldguide.errors import FieldguideError
from fieldguide.service import analytics, console
from fieldguide_testing.serving import make_app, serve

TOKEN = "console-token-" + "k" * 24
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DOCS_SITE = "https://docs.example.com"
PERSONAL = "My name is Ada Example and my booking 4711 failed"  # a reader's question: personal data
DAY = 86400.0
API = ("summary", "questions", "questions.csv", "coverage", "coverage.csv", "feedback", "feedback.csv",
       "handoffs", "handoffs.csv", "gaps", "gaps.csv", "stale", "stale.csv")


def midnight(days_ago: int) -> float:
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return today.timestamp() - days_ago * DAY


def day(days_ago: int) -> str:
    return analytics.day_of(midnight(days_ago))


def seed(state) -> None:
    """Turns over three UTC days (and one long before), their votes and two handoffs."""
    turns = state.turns
    two, one, today = midnight(2), midnight(1), midnight(0)

    def turn(cid, question, at, status="done", error=None, **final):
        record = turns.start(cid, question, started_at=at)
        if status != "running":
            turns.finish(record.finish(status, final, error))

    turn("c1", "How do I add a boat?", two + 3600, abstain=False, answer="Open the fleet list [1].")  # no verdict stored
    turn("c1", PERSONAL, two + 3700, abstain=True, answer="The docs do not cover this.")
    turn("c2", "Refunds?", two + 5000, status="error", error="the chat model failed")
    turn("c3", "Which fields does the booking form have?", one + 60, abstain=False, coverage="partial")
    turn("c3", "And the deposit?", one + 120, abstain=False, coverage="covered")
    turn("c4", "Can I run payroll?", one + 180, abstain=True, coverage="not_covered")
    turn("c5", "Still being answered", today + 1, status="running")
    turn("c6", "Asked long ago", midnight(40), abstain=True)
    turns.add_feedback("c1", 1, "up", at=two + 3800)
    turns.add_feedback("c1", 2, "down", at=two + 3900)
    turns.add_feedback("c1", 2, "up", at=one + 10)  # a change of mind: counted once, as up, on its own day
    turns.add_feedback("c3", 1, "down", "not the fields I meant", at=one + 200)
    turns.add_feedback("c4", 1, "down", at=today + 2)
    state.outbox.add("h-1", ["webhook", "email"], {"contact": "ada@example.com"}, now=one + 300)
    state.outbox.add("h-2", ["webhook"], {"contact": "bob@example.com"}, now=today + 3)
    (first_webhook,) = [d for d in state.outbox.claim(one + 301, 60, 10) if d.id == "h-1" and d.target == "webhook"][:1]
    state.outbox.delivered(first_webhook, one + 302)


EXPECTED = {
    "questions": [{"day": day(2), "questions": 3, "conversations": 2, "errors": 1},
                  {"day": day(1), "questions": 3, "conversations": 2, "errors": 0},
                  {"day": day(0), "questions": 1, "conversations": 1, "errors": 0}],
    "coverage": [{"day": day(2), "covered": 1, "partial": 0, "not_covered": 1},
                 {"day": day(1), "covered": 1, "partial": 1, "not_covered": 1},
                 {"day": day(0), "covered": 0, "partial": 0, "not_covered": 0}],
    "feedback": [{"day": day(2), "up": 1, "down": 0},
                 {"day": day(1), "up": 1, "down": 1},
                 {"day": day(0), "up": 0, "down": 1}],
    "handoffs": [{"day": day(2), "requests": 0, "delivered": 0, "pending": 0, "failed": 0},
                 {"day": day(1), "requests": 1, "delivered": 1, "pending": 1, "failed": 0},
                 {"day": day(0), "requests": 1, "delivered": 0, "pending": 1, "failed": 0}],
}


@pytest.fixture
def console_app():
    return make_app(console_token=TOKEN)


def test_every_chart_counts_the_turns_it_was_fed(backend):
    app = make_app(console_token=TOKEN, **backend)
    seed(app.state.service.state)
    with serve(app) as base, httpx.Client(timeout=30, headers=AUTH) as client:
        for name, rows in EXPECTED.items():
            body = client.get(f"{base}/console/api/{name}", params={"days": 3}).json()
            assert body["rows"] == rows, name
            assert (body["from"], body["to"]) == (day(2), day(0))
            assert body["totals"] == {k: sum(r[k] for r in rows) for k in rows[0] if k != "day"}
            exported = client.get(f"{base}/console/api/{name}.csv", params={"days": 3})
            assert exported.headers["content-type"].startswith("text/csv")
            assert "attachment" in exported.headers["content-disposition"]
            assert [{k: v if k == "day" else int(v) for k, v in r.items()}
                    for r in csv.DictReader(io.StringIO(exported.text))] == rows, name
        wider = client.get(f"{base}/console/api/questions", params={"days": 41}).json()
        assert wider["totals"]["questions"] == 8 and len(wider["rows"]) == 41  # the old turn, and empty days
        summary = client.get(f"{base}/console/api/summary", params={"days": 3}).json()
    assert summary["questions"] == {"questions": 7, "conversations": 5, "errors": 1}
    assert summary["coverage"] == {"covered": 2, "partial": 1, "not_covered": 2}
    assert summary["feedback"] == {"up": 2, "down": 2}
    assert summary["handoffs"] == {"requests": 2, "delivered": 1, "pending": 2, "failed": 0}


def test_the_window_is_checked(console_app):
    with serve(console_app) as base:
        for bad in ("0", "367", "ten", "-1"):
            response = httpx.get(f"{base}/console/api/questions", params={"days": bad}, headers=AUTH)
            assert response.status_code == 422 and "days" in response.json()["detail"], bad
        assert httpx.get(f"{base}/console/api/gaps", params={"top": "0"}, headers=AUTH).status_code == 422


def test_without_the_setting_the_console_does_not_exist():
    app = make_app()
    seed(app.state.service.state)
    with serve(app) as base:
        for path in ("/console", *(f"/console/api/{name}" for name in API)):
            response = httpx.get(base + path, headers=AUTH)
            assert response.status_code == 404, path
            assert PERSONAL not in response.text and "Ada" not in response.text


def test_a_short_token_is_refused():
    with pytest.raises(FieldguideError, match="FIELDGUIDE_CONSOLE_TOKEN"):
        make_app(console_token="short")


def test_without_the_token_every_console_route_is_401_and_carries_no_data(console_app):
    seed(console_app.state.service.state)
    wrong = [{}, {"Authorization": "Bearer " + TOKEN[:-1] + "x"}, {"Authorization": "Bearer"},
             {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}, {"Authorization": f"Token {TOKEN}"},
             {"Cookie": f"token={TOKEN}"}, {"X-Console-Token": TOKEN}]
    with serve(console_app) as base:
        for path in (*(f"/console/api/{name}" for name in API), "/console/api/nothing-here", "/console/x"):
            for headers in wrong:
                response = httpx.get(base + path, headers=headers)
                assert response.status_code == 401, (path, headers)
                assert response.headers["www-authenticate"].startswith("Bearer")
                assert response.headers["cache-control"] == "no-store"
                assert set(response.json()) == {"detail"}  # no rows, no totals, no questions
        # the same paths with the token: data (or, for a path that is not there, 404)
        assert httpx.get(base + "/console/api/questions", headers=AUTH).json()["totals"]["questions"] == 7
        assert httpx.get(base + "/console/api/nothing-here", headers=AUTH).status_code == 404
        assert httpx.get(base + "/console/api/questions", headers={"Authorization": f"bearer  {TOKEN}"}
                         ).status_code == 200  # the scheme is case-insensitive, spaces before the token trimmed


def test_the_token_is_never_taken_from_a_url(console_app):
    seed(console_app.state.service.state)
    with serve(console_app) as base:
        for params in ({"token": TOKEN}, {"access_token": TOKEN}, {"authorization": f"Bearer {TOKEN}"},
                       {"bearer": TOKEN}):
            response = httpx.get(f"{base}/console/api/questions", params=params)
            assert response.status_code == 401, params
            assert httpx.get(f"{base}/console", params=params).status_code == 401
        assert httpx.get(f"{base}/console/api/questions/{TOKEN}").status_code == 401


def test_the_token_is_compared_in_constant_time(console_app, monkeypatch):
    calls = []
    real = console.hmac.compare_digest

    def spy(given, expected):
        calls.append((given, expected))
        return real(given, expected)

    monkeypatch.setattr(console.hmac, "compare_digest", spy)
    with serve(console_app) as base:
        assert httpx.get(f"{base}/console/api/summary", headers=AUTH).status_code == 200
        assert calls[-1] == (TOKEN.encode(), TOKEN.encode())
        calls.clear()
        assert httpx.get(f"{base}/console/api/summary").status_code == 401
        assert calls == [(b"", TOKEN.encode())]  # compared even with no header: no early way out
        calls.clear()
        assert httpx.get(f"{base}/console/api/summary", headers={"Authorization": "Bearer guess"}).status_code == 401
        assert calls == [(b"guess", TOKEN.encode())]
    assert console.bearer_matches(f"Bearer {TOKEN}", TOKEN) and not console.bearer_matches(f"Basic {TOKEN}", TOKEN)


def test_the_page_is_a_shell_that_asks_for_the_token(console_app):
    seed(console_app.state.service.state)
    with serve(console_app) as base:
        anonymous = httpx.get(base + "/console")
        assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Bearer")
        assert anonymous.headers["content-type"].startswith("text/html")
        assert 'id="sign-in"' in anonymous.text and PERSONAL not in anonymous.text
        assert "default-src 'self'" in anonymous.headers["content-security-policy"]
        signed = httpx.get(base + "/console", headers=AUTH)
        assert signed.status_code == 200 and signed.text == anonymous.text  # the shell holds no data either way
        assert httpx.get(base + "/static/console.js").status_code == 200


@pytest.mark.parametrize("origins", [DOCS_SITE, "*"])
def test_no_other_origin_reaches_the_console_not_even_the_widgets(origins):
    """The widget's origins get CORS on the public API, never on /console: a page there cannot
    read the console, with the token or without, and its preflight is refused."""
    app = make_app(console_token=TOKEN, allowed_origins=origins)
    seed(app.state.service.state)
    with serve(app) as base:
        widget = httpx.get(base + "/v1/models", headers={"Origin": DOCS_SITE})
        assert widget.status_code == 200 and widget.headers["access-control-allow-origin"] == DOCS_SITE
        for path in ("/console", *(f"/console/api/{name}" for name in API)):
            response = httpx.get(base + path, headers={**AUTH, "Origin": DOCS_SITE})
            assert response.status_code == 403, path
            assert not any(h.startswith("access-control-") for h in response.headers), path
            assert PERSONAL not in response.text and "rows" not in response.text
            preflight = httpx.options(base + path, headers={"Origin": DOCS_SITE, "Access-Control-Request-Method": "GET",
                                                            "Access-Control-Request-Headers": "authorization"})
            assert preflight.status_code == 403 and "access-control-allow-origin" not in preflight.headers
        own = httpx.get(base + "/console/api/questions", headers={**AUTH, "Origin": base})
        assert own.status_code == 200  # the console's own page (same origin) reads it


def test_coverage_reads_the_stored_verdict_and_else_the_abstention():
    assert analytics.coverage_of({"status": "done", "coverage": "partial", "abstain": False}) == "partial"
    assert analytics.coverage_of({"status": "done", "abstain": True}) == "not_covered"
    assert analytics.coverage_of({"status": "done", "abstain": False}) == "covered"
    assert analytics.coverage_of({"status": "done", "coverage": "bogus", "abstain": True}) == "not_covered"
    assert analytics.coverage_of({"status": "error", "abstain": True}) is None
    assert analytics.coverage_of({"status": "running"}) is None


def test_csv_cells_that_look_like_formulas_are_defused():
    text = analytics.to_csv(("question", "tasks"), [{"question": "=HYPERLINK(\"x\")", "tasks": ["a.md#A", "b.md"]}])
    assert text.splitlines() == ["question,tasks", "\"'=HYPERLINK(\"\"x\"\")\",a.md#A | b.md"]


def test_the_window_is_whole_utc_days():
    now = datetime(2026, 3, 10, 15, 30, tzinfo=timezone.utc).timestamp()
    since, days = analytics.window(3, now)
    assert days == ["2026-03-08", "2026-03-09", "2026-03-10"]
    assert since == datetime(2026, 3, 8, tzinfo=timezone.utc).timestamp()
    with pytest.raises(ValueError):
        analytics.window(0, now)
