"""The query side reads a chunk's `reading` (the page as rendered), never the dialect's syntax,
and shows a front-matter page title first in its breadcrumbs."""
from fieldguide.reranker import LexicalFallbackScorer, chunk_text_for_scoring
from nodes.cap import drop_near_duplicates
from nodes.generate import abstain_message
from nodes.quotable import context_units
from prompts.loader import format_context

RAW = ('The width can be set by clicking on :icon{name="material-symbols:more-vert" '
       'title="Field Width Button"} in the data model page.')
READ = "The width can be set by clicking on [Field Width Button] in the data model page."
BLOCK = {"chunk_id": "w", "source": "data-model.md", "heading_path": ["Fields"], "page_title": "Data model",
         "text": RAW, "reading": READ, "similarity": 0.5}


def test_quotes_are_the_reading():
    assert [unit.text for unit in context_units([BLOCK])] == [READ]


def test_the_lexical_scorer_reads_the_reading():
    scorer = LexicalFallbackScorer()
    as_read, as_written = scorer.score("material symbols vert", [BLOCK, {**BLOCK, "reading": None}])
    assert as_read == 0.5 < as_written  # the icon's name is no word of the rendered page
    assert chunk_text_for_scoring(BLOCK) == f"Fields\n{READ}"


def test_the_model_reads_the_reading_under_the_page_title():
    context = format_context([{**BLOCK, "heading_path": []}])
    assert READ in context and "material-symbols" not in context
    assert 'section="Data model"' in context


def test_near_duplicates_are_told_apart_by_their_reading():
    other = {**BLOCK, "chunk_id": "x", "reading": "A different paragraph about relations between collections."}
    assert [c["chunk_id"] for c in drop_near_duplicates([BLOCK, other])] == ["w", "x"]


def test_abstention_names_sections_as_the_site_does():
    message = abstain_message([{"source": "data-model.md", "heading_path": ["Fields"], "page_title": "Data model"}])
    assert '"Data model > Fields" (data-model.md)' in message
