"""Two chunker defects found by outside suites, each pinned by a test.

1. A leading `---` block is front matter only when YAML reads it as a non-empty mapping.
   CommonMark's examples 96 (`---` / `Foo` / `---` / `Bar` / `---` / `Baz`) and 98 (`---` /
   `---`) are thematic breaks and setext headings, and their lines must stay content.
2. A long paragraph underlined by `---` or `===` is one setext heading. As a breadcrumb it
   used to crowd the text out of every part (a hundred parts of a plain document); now the
   heading is cut in `heading_path` and the breadcrumb takes a bounded share of each part.
"""
from __future__ import annotations

import pytest

from ingest.chunker import BREADCRUMB_SHARE, ELLIPSIS, MAX_HEADING_TOKENS


def non_blank_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def kept_lines(chunks) -> list[str]:
    """Every non-blank line of the chunks, in order, with the overlap of split parts removed."""
    lines: list[str] = []
    for chunk in chunks:
        for line in non_blank_lines(chunk.text):
            if line not in lines[-8:]:
                lines.append(line)
    return lines


@pytest.mark.parametrize("document, expected", [
    ("---\nFoo\n---\nBar\n---\nBaz\n", [([], "---"), (["Foo"], "Foo\n---"), (["Bar"], "Bar\n---\nBaz")]),  # example 96
    ("---\n---\n", [([], "---\n---")]),  # example 98
    ("---\n- a list, not a mapping\n---\ntext\n", [([], "---\n- a list, not a mapping\n---\ntext")]),
])
def test_a_leading_rule_block_that_is_not_a_mapping_stays_content(chunker, document, expected):
    chunked = chunker.chunk_bytes(document.encode(), "spec.md")
    assert [(c.heading_path, c.text) for c in chunked.chunks] == expected
    assert chunked.warnings == []


def test_invalid_yaml_in_a_leading_block_is_kept_with_a_warning(chunker):
    chunked = chunker.chunk_bytes(b"---\ntitle: [unclosed\n---\nBody text.\n", "bad.md")
    assert "\n".join(c.text for c in chunked.chunks).split("\n")[:2] == ["---", "title: [unclosed"]
    assert any("not valid YAML" in w and "kept as content" in w for w in chunked.warnings)


def test_a_yaml_mapping_is_still_front_matter(chunker):
    chunked = chunker.chunk_bytes(b"---\ntitle: Exports\ncontent_kind: screen\n---\nBody text.\n", "x.md")
    assert [c.text for c in chunked.chunks] == ["Body text."]
    assert chunked.chunks[0].content_kind == "screen"
    assert chunked.chunks[0].embed_text.startswith("Exports\n\n")


def test_a_paragraph_heading_is_cut_in_the_breadcrumb_and_kept_in_the_text(chunker):
    paragraph = " ".join(f"row {i} of the statement is matched against the payees you have" for i in range(120))
    document = f"{paragraph}\n===\n\nA short paragraph after the heading.\n"
    chunks = chunker.chunk_text(document, "plain.md")
    counter = chunker.counter
    heading = chunks[0].heading_path[0]
    assert heading.endswith(ELLIPSIS) and paragraph.startswith(heading[:-1].rstrip())
    assert counter.count_piece(heading) <= MAX_HEADING_TOKENS
    room = int(chunker.limit * BREADCRUMB_SHARE)
    for chunk in chunks:
        assert chunk.heading_path == [heading]
        breadcrumb = chunk.embed_text.split("\n\n", 1)[0]
        assert counter.count_piece(breadcrumb) <= room
        assert chunk.token_count <= chunker.limit
    # The text gets most of every part: about as many parts as the text needs, not a hundred.
    text_tokens = counter.count_piece(paragraph)
    assert len(chunks) <= text_tokens // (chunker.limit - room - 40) + 2
    # Nothing of the document is lost: the full paragraph is in the chunks' text.
    joined = " ".join(kept_lines(chunks))
    for word in paragraph.split()[-30:]:
        assert word in joined
    assert kept_lines(chunks)[-1] == "A short paragraph after the heading."


def test_short_headings_and_breadcrumbs_are_untouched(chunker):
    heading = "Import and export of budgets from another computer, with every option of the dialog"
    chunks = chunker.chunk_text(f"---\ntitle: Settings\n---\n## {heading}\n\nBody.\n", "x.md")
    assert chunks[-1].heading_path == [heading]
    assert chunks[-1].embed_text.startswith(f"Settings > {heading}\n\n")


def test_a_long_word_heading_is_cut_by_characters(chunker):
    heading = "Заголовок" * 11  # one "word" of 99 letters (longer ones are a single unknown token)
    chunks = chunker.chunk_text(f"# {heading}\n\nТекст раздела.\n", "ru.md")
    cut = chunks[0].heading_path[0]
    assert cut.endswith(ELLIPSIS) and heading.startswith(cut[:-1])
    assert chunker.counter.count_piece(cut) <= MAX_HEADING_TOKENS
    assert chunks[0].text.startswith(f"# {heading}")
