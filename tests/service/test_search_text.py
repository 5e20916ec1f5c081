"""The pure parts of instant search and llms.txt: queries, completion, snippets, pages."""
from __future__ import annotations

import pytest

from fieldguide.bm25 import TermStats
from fieldguide.llms_txt import describe, llms_full_txt, llms_txt, pages_from_chunks, section_of
from fieldguide.section_search import (
    InvalidQuery, clean_query, complete_fragment, last_fragment, marked_words, plain_text, snippet)


def test_queries_are_squeezed_and_empty_or_long_ones_refused():
    assert clean_query("  booking   form ") == "booking form "  # the trailing blank: the word is finished
    assert clean_query("booking fo") == "booking fo"
    for bad in (None, "", "   \n"):
        with pytest.raises(InvalidQuery, match="empty"):
            clean_query(bad)
    with pytest.raises(InvalidQuery, match="longer than 300"):
        clean_query("x" * 301)
    assert last_fragment("how do I exp") == "exp" and last_fragment("how do I export ") is None
    assert last_fragment("what is it?") is None


def test_a_fragment_is_completed_from_the_candidates_weighted_by_rarity():
    stats = TermStats(100, 10.0, {"for": 90, "form": 8, "format": 3, "booking": 10})
    candidates = [{"heading_path": ["Booking form"], "text": "The form has fields for the guest."},
                  {"heading_path": ["Booking"], "text": "Fill in the form for a booking."},
                  {"heading_path": ["Export"], "text": "Choose a format for the file."}]
    assert complete_fragment("fo", candidates, stats) == "form"  # not the commoner "for"
    assert complete_fragment("for", candidates, stats) is None  # a word of the index: as typed
    assert complete_fragment("f", candidates, stats) is None  # too short to mean anything
    assert complete_fragment("zz", candidates, stats) is None


def test_snippets_escape_the_text_and_mark_only_matches():
    text = plain_text("## Embed\n\nPaste <script>alert('x')</script> & the **launcher** [appears](x.md) here.")
    assert "<script>" in text and "**" not in text and "x.md" not in text and "the launcher appears" in text
    assert plain_text("| a | b_c |\n|---|---|\n| (**Settings** menu) | _x_ |") == "a b_c --- --- (Settings menu) x"
    html = snippet(text, ["launcher"], prefix="app")
    assert "&lt;script&gt;" in html and "&amp;" in html
    assert "<mark>launcher</mark>" in html and "<mark>appears</mark>" in html
    assert html.replace("<mark>", "").replace("</mark>", "").count("<") == 0
    long = "word " * 100 + "the export button is here " + "word " * 100
    cut = snippet(long.strip(), ["export"])
    assert cut.startswith("…") and cut.endswith("…") and "<mark>export</mark>" in cut and len(cut) < 260


def test_common_words_are_not_marked():
    stats = TermStats(10, 5.0, {"the": 9, "export": 2})
    assert marked_words("the export", stats) == ["export"]


def test_pages_are_put_back_together_and_listed_as_llms_txt():
    chunks = [
        {"source": "guide/export.md", "heading_path": ["Export"], "text": "# Export\n\nExport your data. More.",
         "group_id": "a", "line_start": 1, "part_index": 1},
        {"source": "guide/export.md", "heading_path": ["Export", "CSV"], "text": "## CSV\n\nThe long part one text",
         "group_id": "b", "line_start": 5, "part_index": 1},
        {"source": "guide/export.md", "heading_path": ["Export", "CSV"], "text": "part one text and part two.",
         "group_id": "b", "line_start": 7, "part_index": 2},
        {"source": "index.md", "heading_path": ["Acme docs"], "text": "# Acme docs\n\nEverything about Acme.",
         "group_id": "c", "line_start": 1, "part_index": 1},
    ]
    pages = pages_from_chunks(chunks)
    assert [p.source for p in pages] == ["guide/export.md", "index.md"]
    export = pages[0]
    assert export.title == "Export" and export.description == "Export your data."
    assert export.markdown == "# Export\n\nExport your data. More.\n\n## CSV\n\nThe long part one text\nand part two."
    assert section_of("guide/export.md") == "Guide" and section_of("index.md") == "Docs"
    text = llms_txt(pages, lambda p: "https://d/" + p.source, "Acme docs", "Everything about Acme.")
    assert text == ("# Acme docs\n\n> Everything about Acme.\n\n## Docs\n\n"
                    "- [Acme docs](https://d/index.md): Everything about Acme.\n\n## Guide\n\n"
                    "- [Export](https://d/guide/export.md): Export your data.\n")
    full = llms_full_txt(pages, lambda p: p.source, "Acme docs", "Everything about Acme.")
    assert "Source: guide/export.md" in full and export.markdown in full
    assert describe("![shot](a.png)\n\n# Title\n\n" + "word " * 60) .endswith("…")
