"""One running fieldguide, many clients: the sample docs in a real Weaviate, the real models.

A coding agent over MCP (the SDK's own client), an OpenAI client, a LangServe RemoteRunnable
and a docs page with the widget (headless Chromium, a second loopback origin) each get a cited
answer from the same index; per-run options sent by RemoteRunnable take effect. Then
`fieldguide mcp` itself, over stdio and over its own streamable HTTP port.
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest
from langserve import RemoteRunnable
from mcp import Client, StdioServerParameters

from fieldguide.service import create_app
from fieldguide.service.assets import WEB_DIR, missing_vendor_files
from fieldguide_testing.docs_site import docs_site
from fieldguide_testing.serving import SAMPLE_DOCS, free_port, serve
from tests.conftest import ingested_collection
from tests.service.test_browser import browser_page  # noqa: F401  (fixture)
from tests.service.test_widget import ask_in_widget

pytestmark = [pytest.mark.weaviate, pytest.mark.models]

REPO = Path(__file__).resolve().parents[2]
QUESTION = "Which fields are on the booking form?"
EXPECTED_SOURCE = "screens/booking-form.md"


@pytest.fixture(scope="module")
def indexed(weaviate_service, tmp_path_factory, embeddings):
    """Settings of a collection holding the sample docs (dropped after the module)."""
    with ingested_collection(weaviate_service, tmp_path_factory.mktemp("fieldguide-data"), embeddings,
                             prefix="Integrations", docs_dir=SAMPLE_DOCS, max_answer_tokens=24) as settings:
        yield settings


@pytest.fixture(scope="module")
def running(indexed):
    """(service URL, docs site URL): one fieldguide over the real graph; the docs site's origin is allowed."""
    if missing_vendor_files(WEB_DIR / "node_modules"):
        pytest.fail("the chat page libraries are not installed: run `npm ci --prefix fieldguide/web`")
    service_port, site_port = free_port(), free_port()
    service = f"http://127.0.0.1:{service_port}"
    settings = indexed.model_copy(update={"allowed_origins": f"http://127.0.0.1:{site_port}"})
    app = create_app(settings)
    app.state.service.resources.warm_up()
    with serve(app, service_port), serve(docs_site(service), site_port) as site:
        yield service, site


def cited(sources: list[str]) -> bool:
    return EXPECTED_SOURCE in sources


def run_async(agent):
    """asyncio.run(agent()) on a thread of its own (the browser fixture's loop holds this one)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, agent()).result()


def test_every_client_gets_a_cited_answer_from_one_running_fieldguide(running, browser_page):
    service, site = running

    async def agent():
        async with Client(service + "/mcp") as client:
            found = await client.call_tool("search_docs", {"query": QUESTION, "k": 3})
            answered = await client.call_tool("ask", {"question": QUESTION})
            return found, answered

    found, answered = run_async(agent)
    assert found.is_error is False and answered.is_error is False, (found.content, answered.content)
    hits = found.structured_content["hits"]
    assert cited([hit["source"] for hit in hits])
    assert all(isinstance(hit["line_start"], int) and hit["line_end"] >= hit["line_start"] for hit in hits)
    mcp_answer = answered.structured_content
    assert mcp_answer["answer"].strip() and mcp_answer["abstain"] is False
    assert cited([c["source"] for c in mcp_answer["citations"]])

    client = openai.OpenAI(base_url=service + "/v1", api_key="not-needed", max_retries=0, timeout=300)
    completion = client.chat.completions.create(model="fieldguide", messages=[{"role": "user", "content": QUESTION}])
    assert completion.choices[0].message.content.strip()
    assert cited([c["source"] for c in completion.model_extra["citations"]])

    state = RemoteRunnable(service + "/rag/", timeout=300).invoke({"question": QUESTION})
    assert state["answer"].strip() and state["abstain"] is False
    assert cited([block["source"] for block in state["context"]])

    page = browser_page
    page.goto(site + "/")
    page.wait_for_selector("[data-fieldguide-widget] .launcher")
    ask_in_widget(page, QUESTION)
    page.wait_for_selector("[data-fieldguide-widget] .answer:not(.streaming)", timeout=300_000)
    assert page.locator("[data-fieldguide-widget] .error").count() == 0
    assert page.inner_text("[data-fieldguide-widget] .answer").strip()
    assert EXPECTED_SOURCE in page.locator("[data-fieldguide-widget] .sources a").all_inner_texts()


def test_run_options_sent_over_rag_invoke_and_remote_runnable_take_effect(running):
    service, _ = running
    remote = RemoteRunnable(service + "/rag/", timeout=300)
    nothing_reaches_it = {"configurable": {"rerank_min": 100}}
    raw = httpx.post(service + "/rag/invoke", timeout=300, json={"input": {"question": QUESTION},
                                                                  "config": nothing_reaches_it})
    assert raw.status_code == 200, raw.text
    assert raw.json()["output"]["abstain"] is True and raw.json()["output"]["context"] == []
    state = remote.invoke({"question": QUESTION}, config=nothing_reaches_it)
    assert state["abstain"] is True and state["stages"]["cap"] == [] and state["stages"]["rerank"]
    assert state["answer"].startswith("The documentation does not cover this question")

    # the answer opens with the quoted evidence; the model's own text after it is what the cap bounds
    short = remote.invoke({"question": QUESTION}, config={"configurable": {"max_answer_tokens": 5, "verify": "off"}})
    generated = " ".join(s["text"] for s in short["sentences"] if s["origin"] == "generated")
    assert short["abstain"] is False and 0 < len(generated) <= 60, short["sentences"]
    assert any(s["origin"] == "evidence" for s in short["sentences"])
    # a budget its first chunk fills: the maximum is a hard one (small chunks may pass it otherwise)
    one = remote.invoke({"question": QUESTION}, config={"configurable": {"max_chunks": 1, "parent_intro": False,
                                                                         "context_token_budget": 1,
                                                                         "max_answer_tokens": 5}})
    assert len(one["stages"]["cap"]) == 1


def mcp_env(settings) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"FIELDGUIDE_WEAVIATE_URL": settings.weaviate_url,
                "FIELDGUIDE_WEAVIATE_GRPC_PORT": str(settings.weaviate_grpc_port),
                "FIELDGUIDE_COLLECTION": settings.collection, "FIELDGUIDE_DATA_DIR": str(settings.data_dir),
                "FIELDGUIDE_MAX_ANSWER_TOKENS": "24", "DISABLE_TELEMETRY": "true", "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1"})
    return env


def test_fieldguide_mcp_over_stdio_answers_searches_and_serves_the_docs(indexed):
    server = StdioServerParameters(command=sys.executable, cwd=str(REPO), env=mcp_env(indexed),
                                   args=["-m", "fieldguide.cli", "mcp", "--docs", str(SAMPLE_DOCS)])

    async def agent():
        async with Client(server, read_timeout_seconds=300) as client:
            tools = await client.list_tools()
            found = await client.call_tool("search_docs", {"query": QUESTION})
            answered = await client.call_tool("ask", {"question": QUESTION})
            text = await client.read_resource("fieldguide://docs/" + EXPECTED_SOURCE)
            return tools, found, answered, text

    tools, found, answered, text = run_async(agent)
    assert {tool.name for tool in tools.tools} == {"search_docs", "ask"}
    assert cited([hit["source"] for hit in found.structured_content["hits"]])
    assert answered.structured_content["answer"].strip()
    assert cited([c["source"] for c in answered.structured_content["citations"]])
    assert text.contents[0].text == (SAMPLE_DOCS / EXPECTED_SOURCE).read_text(encoding="utf-8")


def test_fieldguide_mcp_over_its_own_http_port(indexed, tmp_path):
    port = free_port()
    log = (tmp_path / "mcp.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "fieldguide.cli", "mcp", "--http", str(port)],
                               cwd=REPO, env=mcp_env(indexed), stdin=subprocess.DEVNULL, stdout=log,
                               stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, (tmp_path / "mcp.log").read_text()
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, (tmp_path / "mcp.log").read_text()
                time.sleep(0.3)

        async def agent():
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=300) as client:
                return await client.call_tool("search_docs", {"query": QUESTION, "k": 2})

        found = run_async(agent)
        assert found.is_error is False and len(found.structured_content["hits"]) <= 2
        assert cited([hit["source"] for hit in found.structured_content["hits"]])
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
