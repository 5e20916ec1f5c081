"""The citations one-call clients (OpenAI-compatible chat, MCP) get: the answer's own, numbered like its markers."""
from __future__ import annotations

from fieldguide.service.answers import citations_for

STATE = {"citations": [
    {"n": 1, "chunk_id": "a", "source": "guide/pricing.md", "heading_path": ["Pricing"], "line_start": 3,
     "line_end": 8, "url": "/docs-assets/guide/pricing.md#L3-L8"},
    {"n": 2, "chunk_id": "b", "source": "guide/fleet.md", "heading_path": ["Fleet"], "line_start": 1,
     "line_end": 4, "url": "https://example.org/blob/main/docs/guide/fleet.md#L1-L4"},
]}


def test_a_service_relative_url_is_made_absolute_with_its_line_anchor_and_a_template_url_is_kept():
    citations = citations_for(STATE, lambda source: "http://127.0.0.1:8000/docs-assets/" + source)
    assert [c["n"] for c in citations] == [1, 2]
    assert citations[0]["url"] == "http://127.0.0.1:8000/docs-assets/guide/pricing.md#L3-L8"
    assert citations[1]["url"] == "https://example.org/blob/main/docs/guide/fleet.md#L1-L4"
    assert STATE["citations"][0]["url"] == "/docs-assets/guide/pricing.md#L3-L8"  # the state is left alone


def test_a_client_nothing_serves_the_files_to_gets_no_url_for_them():
    citations = citations_for(STATE, lambda source: None)  # MCP over stdio
    assert citations[0]["url"] is None and citations[0]["source"] == "guide/pricing.md"
    assert citations[1]["url"].startswith("https://example.org/")
