"""The chat page and the LangServe playground in headless Chromium (Debian's chromium, driven by playwright)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fieldguide.service.assets import WEB_DIR, missing_vendor_files
from fieldguide_testing.scripted_graph import build_scripted_graph
from fieldguide_testing.serving import make_app, serve

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is not installed (apt-get install chromium)"),
]

HOSTILE_ANSWER = (
    "Here is the form.\n\n![The booking form](images/booking-form.svg)\n\n"
    "<img src=x onerror=\"window.__injected = 'img'\"> <script>window.__injected = 'script'</script>"
    "[click](javascript:window.__injected='link')\n\nDone with **bold** text."
)


@pytest.fixture
def browser_page(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()


@pytest.fixture
def page_server():
    if missing_vendor_files(WEB_DIR / "node_modules"):
        pytest.fail("the chat page libraries are not installed: run `npm ci --prefix fieldguide/web`")

    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, answer=HOSTILE_ANSWER, token_delay=0.02)

    with serve(make_app(factory)) as base:
        yield base


def test_asking_on_the_page_streams_markdown_and_loads_the_screenshot(browser_page, page_server):
    page = browser_page
    screenshots = []
    page.on("request", lambda request: request.url.endswith(".svg") and screenshots.append(request.url))
    page.goto(page_server + "/")
    page.wait_for_function("() => typeof window.marked !== 'undefined' && typeof window.DOMPurify !== 'undefined'")
    assert screenshots == []  # nothing fetched before the stream names it

    page.fill("#question", "Which fields does the booking form have?")
    page.click("#send")
    page.wait_for_selector(".answer strong", timeout=20_000)  # rendered Markdown
    page.wait_for_selector(".answer:not(.streaming)", timeout=20_000)
    answer = page.locator(".answer")
    assert "Done with bold text." in answer.inner_text()

    image = page.locator(".answer img[alt='The booking form']")
    assert image.get_attribute("loading") == "lazy"
    assert image.get_attribute("src").endswith("/docs-assets/screens/images/booking-form.svg")
    page.wait_for_function(
        "() => { const img = document.querySelector(\".answer img[alt='The booking form']\");"
        " return img && img.complete && img.naturalWidth > 0; }", timeout=20_000)
    assert any(url.endswith("/docs-assets/screens/images/booking-form.svg") for url in screenshots)

    # sources: file link, breadcrumb, lazily loaded thumbnail
    assert page.locator(".sources a").first.inner_text() == "screens/booking-form.md"
    # as the page shows the heading: no {#id}, no emphasis marks, a link's text without its target
    assert page.locator(".sources .breadcrumb").first.inner_text().strip() == "— Booking form › Fields of the form"
    assert page.locator(".sources img").first.get_attribute("loading") == "lazy"

    # nothing from the answer ran as script
    assert page.evaluate("window.__injected") is None
    assert page.locator(".answer script").count() == 0
    assert page.locator(".answer [onerror]").count() == 0
    assert page.locator(".answer a[href^='javascript']").count() == 0


def test_follow_up_on_the_page_continues_the_conversation(browser_page, page_server):
    page = browser_page
    page.goto(page_server + "/")
    page.wait_for_function("() => typeof window.marked !== 'undefined'")
    for question in ("First question?", "And a follow-up?"):
        page.fill("#question", question)
        page.click("#send")
        page.wait_for_function("() => document.querySelectorAll('.answer:not(.streaming)').length === "
                               f"{1 if question.startswith('First') else 2}", timeout=20_000)
    assert page.locator(".turn").count() == 2
    assert page.locator(".error").count() == 0


def test_the_langserve_playground_renders(browser_page, page_server):
    page = browser_page
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    response = page.goto(page_server + "/rag/playground/")
    assert response.status == 200
    page.wait_for_function("() => document.body.innerText.includes('Playground')", timeout=20_000)
    text = page.inner_text("#root")
    assert "QUESTION" in text.upper()  # the input form was built from the /rag input schema
    assert "Start" in text
    assert errors == []


CITED_ANSWER = ("> The booking form has the fields Boat, Start, Duration, Skipper and Deposit. [1]\n\n"
                "Pick a skipper in the Skipper field [1]. ⚠ Skippers can also be booked by phone [7].")


def test_citation_markers_link_to_their_source_and_highlight_it(browser_page):
    if missing_vendor_files(WEB_DIR / "node_modules"):
        pytest.fail("the chat page libraries are not installed: run `npm ci --prefix fieldguide/web`")

    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, answer=CITED_ANSWER, token_delay=0.01)

    with serve(make_app(factory)) as base:
        page = browser_page
        page.goto(base + "/")
        page.wait_for_function("() => typeof window.marked !== 'undefined'")
        page.fill("#question", "How do I add a skipper?")
        page.click("#send")
        page.wait_for_selector(".answer:not(.streaming)", timeout=20_000)
        markers = page.locator(".answer a.cite")
        assert markers.count() == 2  # both [1]; the [7] names no source and is not shown
        assert markers.first.inner_text() == "[1]"
        assert markers.first.get_attribute("href").endswith("/docs-assets/screens/booking-form.md#L5-L12")
        assert "[7]" not in page.locator(".answer").inner_text()
        assert page.locator(".answer blockquote").count() == 1
        assert page.locator(".answer .flag").count() == 1
        assert page.locator(".sources li.cited").count() == 0
        markers.first.hover()
        page.wait_for_selector(".sources li.cited", timeout=5_000)
        assert page.locator(".sources li.cited").get_attribute("data-n") == "1"


PARTIAL_ANSWER = ("The docs do not answer whether you can pay with Bitcoin. Here is what they have that is closest:\n\n"
                  "> A deposit of 30 % of the price is taken from the customer's card. [1]")


def test_a_partial_answer_is_marked_apart_from_an_answer(browser_page):
    """The verdict reaches the page with the sources, before the first token: the turn is marked at
    once, its opening sentence (what the docs do not say) stands out, and the meta line says it."""
    if missing_vendor_files(WEB_DIR / "node_modules"):
        pytest.fail("the chat page libraries are not installed: run `npm ci --prefix fieldguide/web`")

    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, answer=PARTIAL_ANSWER, token_delay=0.05,
                                    coverage=("partial", "the docs never name Bitcoin"))

    page = browser_page
    with serve(make_app(factory)) as base:
        page.goto(base + "/")
        page.wait_for_function("() => typeof window.marked !== 'undefined'")
        page.fill("#question", "Can I pay with Bitcoin?")
        page.click("#send")
        page.wait_for_selector(".turn.coverage-partial .answer.streaming", timeout=20_000)  # marked while streaming
        page.wait_for_selector(".answer:not(.streaming)", timeout=20_000)
        first = page.locator(".turn.coverage-partial .answer > :first-child")
        assert first.inner_text().startswith("The docs do not answer whether you can pay with Bitcoin.")
        assert first.evaluate("e => getComputedStyle(e).fontWeight") == "600"
        assert page.locator(".meta").inner_text().startswith("The docs may not answer this")
