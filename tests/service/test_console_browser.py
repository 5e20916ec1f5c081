"""The console and "Contact support" in headless Chromium: the console page asks for its token and
draws the API's numbers; a page on the widget's own (allowed) origin cannot read the console; a
reader hands a conversation to support from the chat page and from the widget."""
from __future__ import annotations


from pathlib import Path

import pytest

from fieldguide.service.assets import WEB_DIR, missing_vendor_files
from fieldguide_testing.docs_site import docs_site
from fieldguide_testing.receivers import WebhookReceiver, wait_for
from fieldguide_testing.scripted_graph import build_scripted_graph
from fieldguide_testing.serving import free_port, make_app, serve
from tests.service.test_browser import CHROMIUM, browser_page  # noqa: F401  (fixture)
from tests.service.test_console import AUTH, EXPECTED, PERSONAL, TOKEN, seed
from tests.service.test_widget import ask_in_widget

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is not installed (apt-get install chromium)"),
]

SECRET = "browser-handoff-secret"


@pytest.fixture(autouse=True)
def libraries():
    if missing_vendor_files(WEB_DIR / "node_modules"):
        pytest.fail("the page libraries are not installed: run `npm ci --prefix fieldguide/web`")


def chart_data(page, canvas_id: str) -> list[list[int]]:
    return page.evaluate(f"() => window.Chart.getChart(document.getElementById('{canvas_id}'))"
                         ".data.datasets.map((d) => d.data)")


def test_the_console_asks_for_its_token_and_draws_the_numbers(browser_page):
    app = make_app(console_token=TOKEN)
    seed(app.state.service.state)
    page = browser_page
    with serve(app) as base:
        requests = []
        page.on("request", lambda request: requests.append((request.url, request.headers.get("authorization"))))
        page.goto(base + "/console")  # a navigation: no header, so the shell alone (401)
        page.wait_for_selector("#sign-in:not([hidden])")
        assert PERSONAL not in page.content()
        page.fill("#token", "not-the-token-at-all")
        page.click("#sign-in button[type=submit]")
        page.wait_for_selector("#sign-in-error:not([hidden])")
        assert page.evaluate("sessionStorage.getItem('fieldguide.console.token')") is None

        page.fill("#token", TOKEN)
        page.click("#sign-in button[type=submit]")
        page.wait_for_selector("#dashboard:not([hidden])")
        page.select_option("#days", "7")
        page.wait_for_function("() => window.Chart && window.Chart.getChart(document.getElementById('chart-questions'))"
                               " && window.Chart.getChart(document.getElementById('chart-questions')).data.labels.length === 7")
        last3 = lambda series: [values[-3:] for values in series]  # noqa: E731
        assert last3(chart_data(page, "chart-questions")) == [[r["questions"] for r in EXPECTED["questions"]],
                                                               [r["errors"] for r in EXPECTED["questions"]]]
        assert last3(chart_data(page, "chart-coverage")) == [[r[v] for r in EXPECTED["coverage"]]
                                                              for v in ("covered", "partial", "not_covered")]
        assert last3(chart_data(page, "chart-feedback")) == [[r[v] for r in EXPECTED["feedback"]] for v in ("up", "down")]
        assert "7" in page.inner_text("#cards")  # questions in the window

        with page.expect_download() as download:
            page.click("button[data-csv='coverage']")
        exported = open(download.value.path(), encoding="utf-8").read().splitlines()
        assert exported[0] == "day,covered,partial,not_covered" and len(exported) == 8

        # the token went in the header only, never in a URL, and stays in this tab's sessionStorage
        assert all(TOKEN not in url for url, _ in requests)
        assert {auth for url, auth in requests if "/console/api/" in url} == {
            AUTH["Authorization"], "Bearer not-the-token-at-all"}
        assert TOKEN not in page.url
        assert page.evaluate("localStorage.length") == 0
        page.click("#sign-out")
        page.wait_for_selector("#sign-in:not([hidden])")
        assert page.evaluate("sessionStorage.getItem('fieldguide.console.token')") is None


def test_a_page_on_the_widgets_origin_cannot_read_the_console(browser_page):
    """The docs site is in FIELDGUIDE_ALLOWED_ORIGINS (the widget works there), and its script even
    has the token: the browser still gets no console data, while the public API answers it."""
    service_port, site_port = free_port(), free_port()
    service = f"http://127.0.0.1:{service_port}"
    app = make_app(console_token=TOKEN, allowed_origins=f"http://127.0.0.1:{site_port}")
    seed(app.state.service.state)
    with serve(app, service_port), serve(docs_site(service), site_port) as site:
        page = browser_page
        page.goto(site + "/")
        script = """async ([url, token]) => {
            try {
                const response = await fetch(url, token ? {headers: {Authorization: "Bearer " + token}} : {});
                return "read " + response.status + ": " + (await response.text());
            } catch (error) { return "blocked: " + error.name; }
        }"""
        for path in ("/console/api/summary", "/console/api/questions.csv", "/console/api/gaps", "/console"):
            for token in (TOKEN, None):
                assert page.evaluate(script, [service + path, token]) == "blocked: TypeError", (path, token)
        public = page.evaluate(script, [service + "/v1/models", None])
        assert public.startswith("read 200")


def not_covered_graph(checkpointer=None):
    return build_scripted_graph(checkpointer, answer="The documentation does not cover this.", context=[])


def test_a_reader_hands_a_not_covered_answer_to_support_from_the_page_and_the_widget(browser_page):
    webhook = WebhookReceiver(SECRET.encode()).start()
    service_port, site_port = free_port(), free_port()
    service = f"http://127.0.0.1:{service_port}"
    app = make_app(not_covered_graph, allowed_origins=f"http://127.0.0.1:{site_port}",
                   handoff_webhook_url=webhook.url, handoff_secret=SECRET)
    try:
        with serve(app, service_port), serve(docs_site(service), site_port) as site:
            page = browser_page
            page.goto(service + "/")
            page.fill("#question", "Can I run payroll?")
            page.click("#send")
            page.click(".handoff .contact-support", timeout=20_000)
            page.fill(".handoff .contact", "ada@example.org")
            page.fill(".handoff .message", "We need payroll by Friday.")
            page.click(".handoff-form button[type=submit]")
            page.wait_for_selector(".handoff .note:has-text('Sent to support')")
            assert wait_for(lambda: len(webhook.received) == 1, 15)

            page.goto(site + "/")
            page.wait_for_selector("[data-fieldguide-widget] .launcher")
            ask_in_widget(page, "Does it do payroll?")
            page.click("[data-fieldguide-widget] .handoff .contact-support", timeout=20_000)
            page.fill("[data-fieldguide-widget] .handoff .contact", "bob@example.org")
            page.click("[data-fieldguide-widget] .handoff-form button[type=submit]")
            page.wait_for_selector("[data-fieldguide-widget] .handoff .note:has-text('Sent to support')")
            assert wait_for(lambda: len(webhook.received) == 2, 15)
    finally:
        webhook.stop()
    first, second = (r["body"] for r in webhook.received)
    assert (first["contact"], first["message"], first["reason"]) == ("ada@example.org", "We need payroll by Friday.",
                                                                     "not_covered")
    assert first["transcript"][0]["question"] == "Can I run payroll?"
    assert (second["contact"], second["transcript"][0]["question"]) == ("bob@example.org", "Does it do payroll?")
    assert all(r["signed"] for r in webhook.received)


def test_contact_support_is_offered_after_a_thumbs_down(browser_page):
    webhook = WebhookReceiver(SECRET.encode()).start()
    app = make_app(lambda checkpointer=None: build_scripted_graph(checkpointer, answer="Open the form [1]."),
                   handoff_webhook_url=webhook.url, handoff_secret=SECRET)
    try:
        with serve(app) as base:
            page = browser_page
            page.goto(base + "/")
            page.fill("#question", "Which fields does the booking form have?")
            page.click("#send")
            page.wait_for_selector(".feedback .vote", timeout=20_000)
            assert page.locator(".handoff").count() == 0  # a covered answer: not offered by itself
            page.click(".feedback .vote[aria-label='Not helpful']")
            page.click(".handoff .contact-support", timeout=10_000)
            page.fill(".handoff .contact", "ada@example.org")
            page.click(".handoff-form button[type=submit]")
            page.wait_for_selector(".handoff .note:has-text('Sent to support')")
            assert wait_for(lambda: len(webhook.received) == 1, 15)
    finally:
        webhook.stop()
    body = webhook.received[0]["body"]
    assert (body["reason"], body["coverage"]) == ("disliked", "covered")
    assert [c["source"] for c in body["citations"]] == ["screens/booking-form.md"]
