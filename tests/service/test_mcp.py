"""The MCP server mounted at /mcp, driven by the official MCP SDK's own client over streamable HTTP.

(`fieldguide mcp` over stdio and over its own --http port is driven the same way, against a
real index, in test_integrations.py.)
"""
from __future__ import annotations

import asyncio

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from fieldguide_testing.scripted_graph import DEFAULT_ANSWER, build_scripted_graph
from fieldguide_testing.serving import make_app, serve


@pytest.fixture(scope="module")
def mcp_url():
    with serve(make_app()) as base:
        yield base + "/mcp"


def call(url, coroutine_factory):
    async def main():
        async with Client(url) as client:
            return await coroutine_factory(client)
    return asyncio.run(main())


def test_the_tools_are_listed_with_their_schemas(mcp_url):
    tools = call(mcp_url, lambda client: client.list_tools()).tools
    by_name = {tool.name: tool for tool in tools}
    assert set(by_name) == {"search_docs", "ask"}
    k = by_name["search_docs"].input_schema["properties"]["k"]
    assert (k["minimum"], k["maximum"], k["default"]) == (1, 12, 5)  # the public limit of the settings
    assert by_name["ask"].input_schema["required"] == ["question"]
    assert "citations" in by_name["ask"].output_schema["properties"]


def test_search_docs_returns_chunks_with_breadcrumb_source_url_and_score(mcp_url):
    result = call(mcp_url, lambda client: client.call_tool("search_docs", {"query": "booking form fields", "k": 3}))
    assert result.is_error is False
    found = result.structured_content
    assert found["found"] is True and found["query"] == "booking form fields"
    (hit,) = found["hits"]
    assert hit["source"] == "screens/booking-form.md" and hit["breadcrumb"] == "Booking form › Fields of the form"
    assert hit["url"] == "/docs-assets/screens/booking-form.md"
    assert hit["resource"] == "fieldguide://docs/screens/booking-form.md"
    assert hit["score"] == 3.2 and hit["similarity"] == 0.71 and hit["text"]


def test_ask_returns_the_answer_and_its_citations(mcp_url):
    result = call(mcp_url, lambda client: client.call_tool("ask", {"question": "Which fields does the form have?"}))
    assert result.is_error is False
    answer = result.structured_content
    assert answer["answer"] == DEFAULT_ANSWER and answer["abstain"] is False
    assert answer["coverage"] == "covered" and answer["coverage_reason"] == ""
    (citation,) = answer["citations"]
    assert citation["n"] == 1 and citation["source"] == "screens/booking-form.md"
    assert citation["resource"] == "fieldguide://docs/screens/booking-form.md"


def test_the_docs_files_are_resources(mcp_url):
    async def read(client):
        listed = await client.list_resources()
        content = await client.read_resource("fieldguide://docs/screens/booking-form.md")
        return listed, content

    listed, content = call(mcp_url, read)
    uris = [str(resource.uri) for resource in listed.resources]
    assert "fieldguide://docs/screens/booking-form.md" in uris and "fieldguide://docs/index.md" in uris
    assert all(resource.mime_type == "text/markdown" for resource in listed.resources)
    assert content.contents[0].text.startswith("# Booking form")


@pytest.mark.parametrize("uri", ["fieldguide://docs/../pyproject.toml", "fieldguide://docs/nothing-here.md",
                                 "fieldguide://docs/screens/images/booking-form.svg"])
def test_only_markdown_files_of_the_docs_folder_can_be_read(mcp_url, uri):
    async def read(client):
        try:
            await client.read_resource(uri)
        except MCPError as refused:
            return refused
        return None

    refused = call(mcp_url, read)
    assert refused is not None and str(refused)


@pytest.mark.parametrize("tool, arguments, word", [
    ("search_docs", {"query": "fields", "k": 0}, "k"),
    ("search_docs", {"query": "fields", "k": 50}, "k"),
    ("search_docs", {"query": "   "}, "query is empty"),
    ("ask", {"question": ""}, "question"),
    ("ask", {"question": "x" * 2001}, "question"),
    ("ask", {}, "question"),
])
def test_bad_arguments_are_tool_errors_that_say_what_is_wrong(mcp_url, tool, arguments, word):
    result = call(mcp_url, lambda client: client.call_tool(tool, arguments))
    assert result.is_error is True
    assert word in result.content[0].text


def test_a_failing_pipeline_is_a_tool_error_not_a_crash(server_for):
    def factory(checkpointer=None):
        return build_scripted_graph(checkpointer, fail_with=RuntimeError("boom"))

    url = server_for(make_app(factory)) + "/mcp"
    result = call(url, lambda client: client.call_tool("ask", {"question": "Which fields?"}))
    assert result.is_error is True and result.content[0].text.endswith("the pipeline failed: RuntimeError")
