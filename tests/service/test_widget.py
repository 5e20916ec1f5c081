"""The embeddable widget in headless Chromium, on a docs page served from a second loopback origin.

The service runs on one port, the docs pages on another (another origin). The page whose
origin is in FIELDGUIDE_ALLOWED_ORIGINS gets answers, rendered safely in the widget's shadow
root with lazily loaded screenshots; a page on an unlisted origin is refused, and the service
never starts a turn for it.
"""
from __future__ import annotations

import pytest

from fieldguide.service.assets import WEB_DIR, missing_vendor_files
from fieldguide.service.widget import widget_script
from fieldguide.settings import Settings
from fieldguide_testing.docs_site import docs_site
from fieldguide_testing.scripted_graph import build_scripted_graph
from fieldguide_testing.serving import free_port, make_app, serve
from tests.service.test_browser import CHROMIUM, CITED_ANSWER, HOSTILE_ANSWER, browser_page  # noqa: F401  (fixture)

pytestmark = pytest.mark.browser

@pytest.fixture
def sites():
    """(service URL, app, allowed docs site URL, unlisted docs site URL), all on loopback."""
    if missing_vendor_files(WEB_DIR / "node_modules"):
        pytest.fail("the chat page libraries are not installed: run `npm ci --prefix fieldguide/web`")
    service_port, allowed_port, other_port = free_port(), free_port(), free_port()
    service = f"http://127.0.0.1:{service_port}"

    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, answer=HOSTILE_ANSWER, token_delay=0.01)

    app = make_app(factory, allowed_origins=f"http://127.0.0.1:{allowed_port}")
    with serve(app, service_port), serve(docs_site(service), allowed_port) as allowed, \
            serve(docs_site(service), other_port) as other:
        yield service, app, allowed, other


def ask_in_widget(page, question: str) -> None:
    page.click("[data-fieldguide-widget] .launcher")
    page.fill("[data-fieldguide-widget] textarea", question)
    page.click("[data-fieldguide-widget] .send")


def test_a_listed_docs_site_gets_a_safely_rendered_answer_in_the_shadow_root(browser_page, sites):
    service, app, allowed, _ = sites
    page = browser_page
    screenshots = []
    page.on("request", lambda request: request.url.endswith(".svg") and screenshots.append(request.url))
    page.goto(allowed + "/")
    page.wait_for_selector("[data-fieldguide-widget] .launcher")
    assert page.evaluate("document.querySelector('[data-fieldguide-widget]').shadowRoot !== null")
    assert page.evaluate("performance.getEntriesByName('fieldguide-widget-attached').length") == 1
    # the page's styles do not reach into the widget
    launcher_colour = page.evaluate(
        "getComputedStyle(document.querySelector('[data-fieldguide-widget]').shadowRoot"
        ".querySelector('.launcher')).backgroundColor")
    assert launcher_colour != "rgb(255, 0, 0)"
    assert screenshots == []

    ask_in_widget(page, "Which fields does the booking form have?")
    page.wait_for_selector("[data-fieldguide-widget] .answer strong", timeout=20_000)  # rendered Markdown
    page.wait_for_selector("[data-fieldguide-widget] .answer:not(.streaming)", timeout=20_000)
    assert "Done with bold text." in page.inner_text("[data-fieldguide-widget] .answer")

    image = page.locator("[data-fieldguide-widget] .answer img[alt='The booking form']")
    assert image.get_attribute("loading") == "lazy"
    assert image.get_attribute("src") == service + "/docs-assets/screens/images/booking-form.svg"
    page.wait_for_function(
        "() => { const img = document.querySelector('[data-fieldguide-widget]').shadowRoot"
        ".querySelector(\".answer img[alt='The booking form']\"); return img && img.complete && img.naturalWidth > 0; }",
        timeout=20_000)
    assert service + "/docs-assets/screens/images/booking-form.svg" in screenshots
    source_link = page.locator("[data-fieldguide-widget] .sources a").first
    assert source_link.inner_text() == "screens/booking-form.md"
    assert source_link.get_attribute("href") == service + "/docs-assets/screens/booking-form.md#L5-L12"

    # nothing from the answer ran as script, and the page's globals are as they were
    assert page.evaluate("window.__injected") is None
    assert page.locator("[data-fieldguide-widget] .answer script").count() == 0
    assert page.locator("[data-fieldguide-widget] .answer [onerror]").count() == 0
    assert page.locator("[data-fieldguide-widget] .answer a[href^='javascript']").count() == 0
    assert page.evaluate("window.marked") == "the page's own"
    assert page.evaluate("typeof window.DOMPurify") == "undefined"
    assert page.evaluate("typeof window.FieldguideChat") == "undefined"  # chat.js stays private
    assert len(app.state.service.conversations) == 1


def test_citation_markers_in_the_widget_link_to_their_source_on_the_service_and_highlight_it(browser_page):
    if missing_vendor_files(WEB_DIR / "node_modules"):
        pytest.fail("the chat page libraries are not installed: run `npm ci --prefix fieldguide/web`")
    service_port, site_port = free_port(), free_port()
    service = f"http://127.0.0.1:{service_port}"

    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, answer=CITED_ANSWER, token_delay=0.01)

    app = make_app(factory, allowed_origins=f"http://127.0.0.1:{site_port}")
    with serve(app, service_port), serve(docs_site(service), site_port) as site:
        page = browser_page
        page.goto(site + "/")
        page.wait_for_selector("[data-fieldguide-widget] .launcher")
        ask_in_widget(page, "How do I add a skipper?")
        page.wait_for_selector("[data-fieldguide-widget] .answer:not(.streaming)", timeout=20_000)
        markers = page.locator("[data-fieldguide-widget] .answer a.cite")
        assert markers.count() == 2  # both [1]; the [7] names no source and is not shown
        # on the service's origin, not the docs site's, at the cited lines
        assert markers.first.get_attribute("href") == service + "/docs-assets/screens/booking-form.md#L5-L12"
        assert "[7]" not in page.locator("[data-fieldguide-widget] .answer").inner_text()
        assert page.locator("[data-fieldguide-widget] .answer .flag").count() == 1
        cited = page.locator("[data-fieldguide-widget] .sources li.cited")
        assert cited.count() == 0
        markers.first.hover()
        cited.first.wait_for(timeout=5_000)
        assert cited.first.get_attribute("data-n") == "1"


def test_an_unlisted_docs_site_is_refused_and_starts_nothing(browser_page, sites):
    _, app, _, other = sites
    page = browser_page
    page.goto(other + "/")
    page.wait_for_selector("[data-fieldguide-widget] .launcher")
    ask_in_widget(page, "Which fields does the booking form have?")
    error = page.wait_for_selector("[data-fieldguide-widget] .error", timeout=20_000)
    assert "FIELDGUIDE_ALLOWED_ORIGINS" in error.inner_text()
    assert len(app.state.service.conversations) == 0


def test_the_widget_script_is_one_private_scope_with_the_settings_inside():
    # (its size and time to first paint are measured by benchmarks/bench_widget.py)
    script = widget_script(Settings(max_question_chars=321))
    assert script.startswith("(function () {") and script.rstrip().endswith("})();")
    assert '"maxQuestionChars": 321' in script
