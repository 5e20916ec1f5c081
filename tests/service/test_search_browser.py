"""The search box of the chat page and of the widget in headless Chromium, over a real index:
results as the reader types, arrows / Enter / Escape, Enter with nothing chosen asks, the doc set
choice, and Cmd/Ctrl+K opening the widget's box on a docs site of another origin."""
from __future__ import annotations

import pytest

from fieldguide.service.assets import WEB_DIR, missing_vendor_files
from fieldguide_testing.docs_site import docs_site
from fieldguide_testing.serving import free_port, serve
from tests.service.test_browser import CHROMIUM, browser_page  # noqa: F401  (fixture)
from tests.service.test_search import indexed  # noqa: F401  (fixture: the labelled index)

pytestmark = [pytest.mark.browser, pytest.mark.weaviate, pytest.mark.models]

WIDGET = "[data-fieldguide-widget]"


@pytest.fixture(scope="module")
def service(indexed):  # noqa: F811
    """(service URL, allowed docs site URL, app): the real app, its widget allowed on the site."""
    from fieldguide.service import create_app

    if missing_vendor_files(WEB_DIR / "node_modules"):
        pytest.fail("the chat page libraries are not installed: run `npm ci --prefix fieldguide/web`")
    settings, _ = indexed
    service_port, site_port = free_port(), free_port()
    url = f"http://127.0.0.1:{service_port}"
    app = create_app(settings.model_copy(update={"allowed_origins": f"http://127.0.0.1:{site_port}"}))
    with serve(app, service_port), serve(docs_site(url), site_port) as site:
        yield url, site, app


def option_states(page, scope=""):
    return page.eval_on_selector_all(f"{scope} [role=option]".strip(),
                                     "items => items.map(i => i.getAttribute('aria-selected'))")


def test_the_page_searches_as_the_reader_types_and_asks_on_enter(browser_page, service):  # noqa: F811
    url, _, app = service
    page = browser_page
    page.goto(url + "/")
    page.click("#question")
    page.keyboard.type("booking fo", delay=40)
    page.wait_for_selector("#search-results .result-title", timeout=20_000)
    titles = page.locator("#search-results .result-title").all_inner_texts()
    breadcrumbs = page.locator("#search-results .result-breadcrumb").all_inner_texts()
    assert "screens/booking-form.md" in breadcrumbs[0] and titles[0]
    assert page.locator("#search-results mark").count() >= 1
    assert page.locator("#search-results .ask-option").inner_text() == "Ask: booking fo"

    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowUp")
    states = option_states(page, "#search-results")
    assert states[0] == "true" and states.count("true") == 1
    assert page.get_attribute("#question", "aria-activedescendant") == page.get_attribute(
        "#search-results [role=option] >> nth=0", "id")
    with page.expect_popup() as opened:
        page.keyboard.press("Enter")  # the chosen section opens; nothing is asked
    assert "/docs-assets/screens/booking-form.md" in opened.value.url
    opened.value.close()
    assert page.locator("#thread .turn").count() == 0 and len(app.state.service.conversations) == 0

    page.fill("#question", "")
    page.keyboard.type("sync conf", delay=30)
    page.wait_for_selector("#search-results .result", timeout=20_000)
    page.keyboard.press("Escape")
    assert page.locator("#search-results").is_hidden()

    page.keyboard.press("Enter")  # nothing chosen: the text becomes a question
    page.wait_for_selector("#thread .turn .question", timeout=20_000)
    assert page.locator("#thread .turn .question").first.inner_text() == "sync conf"
    assert page.locator("#search-results").is_hidden()


def test_the_page_offers_the_doc_sets_and_limits_the_search_to_the_one_chosen(browser_page, service):  # noqa: F811
    url, _, _ = service
    page = browser_page
    page.goto(url + "/")
    page.wait_for_selector("#labels:not([hidden])", timeout=20_000)
    assert page.eval_on_selector_all("#labels option", "o => o.map(x => x.value)") == ["", "v1", "v2"]
    page.select_option("#labels", "v1")
    page.click("#question")
    page.keyboard.type("export to csv", delay=30)
    page.wait_for_selector("#search-results .result-breadcrumb", timeout=20_000)
    breadcrumbs = page.locator("#search-results .result-breadcrumb").all_inner_texts()
    assert breadcrumbs and all(b.startswith("v1 · ") for b in breadcrumbs)


def test_ctrl_k_opens_the_widget_box_which_searches_and_navigates(browser_page, service):  # noqa: F811
    _, site, app = service
    page = browser_page
    page.goto(site + "/")
    page.wait_for_selector(f"{WIDGET} .launcher")
    assert page.locator(f"{WIDGET} .panel").is_hidden()
    page.keyboard.press("Control+k")
    page.wait_for_selector(f"{WIDGET} .panel:not([hidden])")
    assert page.evaluate("document.querySelector('[data-fieldguide-widget]').shadowRoot.activeElement.tagName") \
        == "TEXTAREA"
    page.keyboard.type("booking fo", delay=40)
    page.wait_for_selector(f"{WIDGET} .result-title", timeout=20_000)
    assert page.locator(f"{WIDGET} mark").count() >= 1
    page.keyboard.press("ArrowDown")
    assert option_states(page, WIDGET)[0] == "true"
    page.keyboard.press("Escape")  # the results close first ...
    assert page.locator(f"{WIDGET} .results").is_hidden() and page.locator(f"{WIDGET} .panel").is_visible()
    page.keyboard.press("Escape")  # ... then the panel
    assert page.locator(f"{WIDGET} .panel").is_hidden()
    page.keyboard.press("Meta+k")  # Cmd+K on a Mac
    page.wait_for_selector(f"{WIDGET} .panel:not([hidden])")
    page.keyboard.press("Enter")  # nothing chosen: asks what is in the box
    page.wait_for_selector(f"{WIDGET} .turn .question", timeout=20_000)
    assert page.locator(f"{WIDGET} .turn .question").first.inner_text() == "booking fo"
    assert page.locator(f"{WIDGET} select").is_visible()  # two doc sets: the choice is offered
