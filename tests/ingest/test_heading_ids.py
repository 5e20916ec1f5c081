"""Explicit heading ids (`## Installing {#install}`): kept in the heading path as written, left out
of everything a reader or a model reads and of what is embedded and scored."""
from __future__ import annotations

from fieldguide.bm25 import document_words
from fieldguide.headings import breadcrumb, heading_label, split_heading_id


def test_an_explicit_id_is_split_from_the_heading_text():
    assert split_heading_id("Installing {#install}") == ("Installing", "install")
    assert heading_label("File name handling {#file-name-handling}") == "File name handling"
    assert heading_label("`PAPERLESS_OCR_CLEAN=<mode>` {#PAPERLESS_OCR_CLEAN}") == "PAPERLESS_OCR_CLEAN=<mode>"
    # not an id: braces inside the text, a blank inside, an empty id, no closing brace
    for title in ("Use {#x} in a template", "Set {#not an id}", "Empty {#}", "Open {#brace"):
        assert split_heading_id(title) == (title, None)
    assert breadcrumb(["Setup {#setup}", "Installing {#install}"]) == "Setup > Installing"
    assert breadcrumb(["Setup {#setup}"], " › ") == "Setup"


def test_inline_markdown_in_a_heading_reads_as_the_page_shows_it():
    """A link shows its text (its target is no word of the heading), code its code as written,
    emphasis its words, an HTML tag nothing."""
    assert heading_label("Additional Storage [(External Libraries)](/docs/features/libraries)") == \
        "Additional Storage (External Libraries)"
    assert heading_label("[`PAPERLESS_REDIS=<url>`](#PAPERLESS_REDIS) {#PAPERLESS_REDIS}") == "PAPERLESS_REDIS=<url>"
    assert heading_label("The `config.yml` **options** and _why_") == "The config.yml options and why"
    assert heading_label("Casting <Badge text=\"beta\" /> to a TV") == "Casting to a TV"
    # what is no markup stays: identifiers with underscores, arithmetic, a language's name
    assert heading_label("PAPERLESS_REDIS_PREFIX and snake_case") == "PAPERLESS_REDIS_PREFIX and snake_case"
    assert heading_label("2 * 3 = 6 in C++ and C#") == "2 * 3 = 6 in C++ and C#"
    assert breadcrumb(["Cast [support](cast.md)", "`cast.enabled`"]) == "Cast support > cast.enabled"
    assert document_words(["Storage [Template](/docs/administration/storage-template.mdx)"], "") == \
        document_words(["Storage Template"], "")


def test_the_scorer_reads_the_same_words_with_or_without_an_id():
    assert document_words(["Setup {#setup}", "Installing {#install}"], "Run it.") == \
        document_words(["Setup", "Installing"], "Run it.")


def test_readers_see_the_heading_without_its_id():
    from fieldguide.commands.ask import format_sources
    from nodes.generate import abstain_message
    from prompts.loader import section_label

    block = {"source": "setup.md", "heading_path": ["Setup {#setup}", "Installing {#install}"]}
    assert format_sources([block]) == ["  - setup.md: Setup > Installing"]
    assert abstain_message([block]).endswith('"Setup > Installing" (setup.md).')
    # the excerpt opens with its own heading line, as written: the label names only the parents
    assert section_label(block, "## Installing {#install}\n\nRun it.") == "Setup"
    assert section_label(block, "Run it.") == "Setup > Installing"


def test_the_chunker_keeps_the_id_in_the_path_and_out_of_the_breadcrumb(chunker):
    body = " ".join(["Run the installer and follow its steps."] * 40)  # too long to merge into the parent
    chunks = chunker.chunk_text(f"# Guide {{#guide}}\n\n{body}\n\n## Installing {{#install}}\n\n{body}\n", "guide.md")
    installing = next(c for c in chunks if c.heading_path[-1:] == ["Installing {#install}"])
    assert installing.heading_path == ["Guide {#guide}", "Installing {#install}"]
    # the page shows no id: what is embedded and quoted leaves it out, the text as written keeps it
    assert installing.embed_text.startswith("Guide > Installing\n\n## Installing\n")
    assert installing.reading.startswith("## Installing\n")
    assert installing.text.startswith("## Installing {#install}\n")
