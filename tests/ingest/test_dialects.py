"""Docs-site dialects read for their meaning (`ingest.dialects`).

Each dialect has a fixture in `data/dialect-*`; its reading (one line a source line: `NNN | as
written` then `    = reading`, `    -` where the line disappears) is pinned in
`golden/dialect-*.reading.txt`. Regenerate with `FIELDGUIDE_UPDATE_GOLDEN=1`, then read the diff.
"""
import os
from pathlib import Path

import pytest

from fieldguide.headings import breadcrumb, shown_labels
from ingest.chunker import Chunker
from ingest.dialects import (
    ALL_FAMILIES, FAMILIES, NOT_AVAILABLE, Dialect, detect_dialects, folder_dialect, leftover_syntax,
    parse_setting, read_fragment, read_lines, reading_of,
)
from ingest.kind import decide_content_kind
from ingest.markdown import decode_markdown, parse_markdown

DATA = Path(__file__).parent / "data"
GOLDEN = Path(__file__).parent / "golden"
FIXTURES = sorted(p.name for p in DATA.iterdir() if p.name.startswith("dialect-"))
PLAIN = ["empty.md", "leading-rules.md", "long.md", "merge.md", "notes-only.md", "screen.md", "setext-paragraph.md",
         "ui.md"]
EXPECTED_FAMILY = {"dialect-mkdocs.md": "mkdocs", "dialect-docusaurus.mdx": "docusaurus", "dialect-mdc.md": "mdc",
                   "dialect-hugo.md": "hugo", "dialect-jekyll.md": "jekyll"}
SOURCES = frozenset(p.name for p in DATA.iterdir())


def render_reading(lines, reading) -> str:
    out = []
    for number, (raw, read) in enumerate(zip(lines, reading.lines), 1):
        out.append(f"{number:03} | {raw}")
        if read != raw:
            out.append("    -" if read is None else f"    = {read}")
    return "\n".join(out) + "\n"


def document(name):
    text, _ = decode_markdown((DATA / name).read_bytes(), name)
    return parse_markdown(text, name)


@pytest.mark.parametrize("name", FIXTURES)
def test_reading_matches_golden(name):
    doc = document(name)
    reading = read_lines(doc.lines, Dialect(ALL_FAMILIES, SOURCES), name, doc.body_start)
    actual = render_reading(doc.lines, reading)
    golden = GOLDEN / (name + ".reading.txt")
    if os.environ.get("FIELDGUIDE_UPDATE_GOLDEN"):
        golden.write_text(actual, encoding="utf-8")
    assert actual == golden.read_text(encoding="utf-8")


def test_every_dialect_has_a_fixture():
    assert sorted(EXPECTED_FAMILY.values()) == sorted(FAMILIES)
    assert sorted(EXPECTED_FAMILY) == FIXTURES


@pytest.mark.parametrize("name", FIXTURES)
def test_no_syntax_left_in_what_is_embedded_or_quoted(settings, name):
    chunker = Chunker(settings, dialect=Dialect(ALL_FAMILIES, SOURCES))
    chunks = chunker.chunk_path(DATA / name, DATA).chunks
    assert any(leftover_syntax(c.text) for c in chunks), "the fixture holds no construct to read"
    for chunk in chunks:
        assert leftover_syntax(chunk.embed_text) == [], chunk.embed_text
        assert leftover_syntax(chunk.reading) == [], chunk.reading


@pytest.mark.parametrize("name", FIXTURES)
def test_nothing_is_lost_and_text_is_as_written(settings, name):
    chunks = Chunker(settings).chunk_path(DATA / name, DATA).chunks
    doc = document(name)
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.line_start - 1, chunk.line_end))
        if chunk.part_count == 1:
            assert chunk.text == "\n".join(doc.lines[chunk.line_start - 1:chunk.line_end])
    assert [i for i in range(doc.body_start, len(doc.lines)) if doc.lines[i].strip() and i not in covered] == []


@pytest.mark.parametrize("name", PLAIN)
def test_plain_markdown_reads_as_written(chunker, name):
    for chunk in chunker.chunk_path(DATA / name, DATA).chunks:
        # the one difference: a part that starts inside a code block shows it as code
        reopened = chunk.reading.removeprefix("```\n") if chunk.part_index > 1 else chunk.reading
        assert reopened == chunk.text
        assert chunk.embed_text.split("\n\n", 1)[1].startswith(chunk.reading)


def test_a_part_that_starts_inside_a_code_block_reads_as_code(chunker):
    chunks = [c for c in chunker.chunk_path(DATA / "long.md", DATA).chunks if c.reading != c.text]
    assert chunks and all(c.part_index > 1 and c.reading == "```\n" + c.text for c in chunks)
    plain = {c.chunk_id: c for c in Chunker(dialect=Dialect(frozenset())).chunk_path(DATA / "long.md", DATA).chunks}
    assert all(plain[c.chunk_id].reading == c.text for c in chunks)  # a folder without a dialect reads as written


@pytest.mark.parametrize("name", FIXTURES)
def test_the_dialect_is_detected(name):
    assert EXPECTED_FAMILY[name] in detect_dialects([(DATA / name).read_text(encoding="utf-8")])


def test_plain_docs_have_no_dialect():
    assert detect_dialects((DATA / name).read_text(encoding="utf-8") for name in PLAIN) == frozenset()
    assert folder_dialect([]).name == "commonmark"


def test_syntax_shown_in_a_code_block_is_no_construct():
    text = "Write an admonition like this:\n\n```markdown\n!!! note \"Title\"\n    Body.\n```\n"
    assert detect_dialects([text]) == frozenset()
    reading = read_lines(text.split("\n"), Dialect())
    assert reading.lines[3] == '!!! note "Title"'


def test_the_setting_names_a_dialect():
    assert parse_setting("auto") is None and parse_setting("") is None
    assert parse_setting("commonmark") == frozenset()
    assert parse_setting("mkdocs, mdx") == frozenset({"mkdocs", "docusaurus"})
    with pytest.raises(ValueError, match="sphinx.*mkdocs, docusaurus, mdc, hugo, jekyll"):
        parse_setting("sphinx")
    assert folder_dialect(["!!! note\n    x\n"], setting="hugo").families == frozenset({"hugo"})


def test_unknown_constructs_pass_through_unchanged():
    lines = [":::custom", "Body.", ":::", "{{< shortcode >}}", "!!! note", "    indented"]
    docusaurus = read_lines(lines, Dialect(frozenset({"docusaurus"})))
    assert docusaurus.lines == lines  # no admonition type: not a Docusaurus container; no Hugo, no MkDocs
    plain = read_lines(lines, Dialect(frozenset()))
    assert plain.lines == lines


def test_an_icon_component_reads_as_its_title_and_counts_as_a_button():
    line = 'Set it by clicking on :icon{name="material-symbols:more-vert" title="Field Width Button"} in the page.'
    read = read_lines([line], Dialect(frozenset({"mdc"}))).lines[0]
    assert read == "Set it by clicking on [Field Width Button] in the page."
    text = f"{read}\n\nThen open :icon{{name=\"x\" title=\"Display Options\"}} to change it."
    reading = read_lines(text.split("\n"), Dialect(frozenset({"mdc"})))
    kind, reason = decide_content_kind("\n".join(line for line in reading.lines if line is not None), ["Width"], {})
    assert "2 bold UI labels" in reason


def test_includes_read_as_where_their_text_is():
    dialect = Dialect(frozenset({"mkdocs"}), frozenset({"guide/shared.md"}))
    lines = ['--8<-- "docs/guide/shared.md"', '--8<-- "includes/missing.md"', "--8<--", "guide/shared.md", "--8<--"]
    assert read_lines(lines, dialect, "guide/page.md").lines == [
        "(included from guide/shared.md)", NOT_AVAILABLE, None, "(included from guide/shared.md)", None]


def test_admonitions_are_marked_as_note_tip_or_warning():
    lines = ['!!! danger "Data loss"', "    Back up.", ":::tip", "Fast.", ":::", "{{< hint info >}}", "{{< /hint >}}"]
    read = read_lines(lines, Dialect()).lines
    assert read == ["Warning: Data loss", "Back up.", "Tip:", "Fast.", None, "Note:", None]
    # Python-Markdown takes the space after the marker as optional: `!!!info ""` is an admonition too
    assert read_lines(['!!!tip "Share many albums"', "    One secret.", '???info ""', "    Body."],
                      Dialect()).lines == ["Tip: Share many albums", "One secret.", "Note:", "Body."]
    assert folder_dialect(['!!!info ""\n    The label filter does not support &.\n']).families == frozenset({"mkdocs"})


def test_a_part_is_read_from_the_state_at_its_first_line(settings):
    body = "\n\n".join(f"    Paragraph {n} of the admonition explains one more setting in some detail, "
                       f"with enough words to need a part of its own." for n in range(40))
    text = f"# Settings\n\n!!! note \"Limits\"\n{body}\n\nAfter the note.\n"
    chunks = Chunker(settings).chunk_text(text, "limits.md")
    assert len(chunks) > 2
    for chunk in chunks:
        assert not any(line.startswith("    ") for line in chunk.reading.split("\n")), chunk.reading
        assert leftover_syntax(chunk.embed_text) == []
    assert chunks[0].reading.startswith("# Settings\n\nNote: Limits")


def test_a_fragment_inside_a_code_block_reopens_it():
    lines = ["```yaml", "key: {{< sitevar name=\"domain\" >}}", "other: 1", "```"]
    reading = read_lines(lines, Dialect(frozenset({"hugo"})), keep_states=True)
    assert reading.lines[1] == "key: domain"  # Hugo renders shortcodes inside code too
    assert read_fragment("other: 1\n```", Dialect(frozenset({"hugo"})), state=reading.states[2]) == \
        "```\nother: 1\n```"


def test_mdc_props_are_no_heading(settings):
    text = '---\ntitle: Cards\n---\n\n::card{title="Relations"}\n---\nto: /x\n---\nLink items.\n::\n'
    chunks = Chunker(settings).chunk_text(text, "cards.md")
    assert [c.heading_path for c in chunks] == [[]]
    assert chunks[0].reading == "Relations:\nLink items."


def test_a_page_without_h1_is_titled_from_front_matter(settings):
    toml = '+++\ntitle = "Backups"\n+++\n\n## Where\n\nNightly.\n'
    yaml = "---\ntitle: Backups\n---\n\n# Backups and restores\n\nNightly.\n"
    untitled, = Chunker(settings).chunk_text(toml, "b.md")
    titled, = Chunker(settings).chunk_text(yaml, "c.md")
    assert (untitled.heading_path, untitled.page_title) == (["Where"], "Backups")
    assert untitled.embed_text.startswith("Backups > Where\n\n")
    assert (titled.heading_path, titled.page_title) == (["Backups and restores"], "")
    assert breadcrumb(untitled.heading_path, page_title=untitled.page_title) == "Backups > Where"
    assert shown_labels([], "Backups") == ["Backups"]
    assert shown_labels(["Backups"], "Backups") == ["Backups"]


def test_an_invisible_piece_joins_the_next(settings):
    text = "import Tabs from '@theme/Tabs';\n\n## Install\n\nRun it.\n"
    chunks = Chunker(settings).chunk_text(text, "install.mdx")
    assert len(chunks) == 1 and chunks[0].line_start == 1
    assert chunks[0].reading == "## Install\n\nRun it."


def test_reading_of_a_block_falls_back_to_its_text():
    assert reading_of({"text": "raw", "reading": "read"}) == "read"
    assert reading_of({"text": "raw", "reading": ""}) == ""
    assert reading_of({"text": "raw"}) == "raw"


def test_an_imported_markdown_component_is_an_include():
    lines = ["import Steps from '/docs/partials/_steps.mdx';", "", "<Steps />", "Then <Steps /> again."]
    dialect = Dialect(frozenset({"docusaurus"}), frozenset({"partials/_steps.mdx"}))
    assert read_lines(lines, dialect, "install.mdx").lines == [
        None, "", "(included from partials/_steps.mdx)", "Then (included from partials/_steps.mdx) again."]


def test_hugo_callouts_and_site_variables_read_as_the_page_shows_them():
    lines = ['{{< callout context="note" title="Note" icon="outline/info-circle" >}}', "Body.", "{{< /callout >}}",
             'Open `https://{{< sitevar name="domain" nojs="example.com" >}}`.']
    assert read_lines(lines, Dialect(frozenset({"hugo"}))).lines == ["Note:", "Body.", None,
                                                                    "Open `https://example.com`."]


def test_leftover_syntax_counts_comments_and_mdx_code_block_fences_outside_code():
    assert leftover_syntax("Text <!-- a note for writers -->", ["hugo"]) == ["hugo"]
    assert leftover_syntax("Write `<!-- more -->` to cut the excerpt.", ["hugo"]) == []
    assert leftover_syntax("```mdx-code-block\n<Tabs>\n```", ["docusaurus"]) == ["docusaurus"]
    # a fence closes only with as many backticks as it opened with: the inner block is code
    assert leftover_syntax("````md\n```\n:::tip\n```\n````", ["docusaurus"]) == []


def test_a_part_inside_an_mdx_code_block_reads_as_mdx():
    dialect = Dialect(frozenset({"docusaurus"}))
    lines = ["````mdx-code-block", "<Tabs>", '<TabItem value="a" label="Linux">', "", "Run it.", "</TabItem>",
             "</Tabs>", "````", "", "```js", "<Tabs>", "```"]
    reading = read_lines(lines, dialect, keep_states=True)
    assert reading.lines[:8] == [None, None, "Linux:", "", "Run it.", None, None, None]
    assert reading.lines[10] == "<Tabs>"  # a code fence after it is code again
    assert read_fragment("\n".join(lines[4:8]), dialect, state=reading.states[4]) == "Run it."


def test_html_comments_and_heading_ids_leave_the_reading():
    dialect = Dialect(frozenset({"hugo"}))
    lines = ["## Restoring {#restoring}", "Stop it first. <!-- link the page -->", "<!--", "hidden", "-->", "Shown."]
    assert read_lines(lines, dialect).lines == ["## Restoring", "Stop it first.", None, None, None, "Shown."]
    assert read_lines(lines, Dialect(frozenset())).lines == lines  # a plain folder reads as written


def test_a_heading_the_page_shows_nothing_of_leaves_no_empty_crumb():
    chunker = Chunker(dialect=Dialect(frozenset({"mkdocs"})))
    body = " ".join(["Turns the table of contents on for every page."] * 40)  # too long to merge into the parent
    text = f"# Guide\n\n{body}\n\n## <!-- md:setting toc -->\n\n{body}\n"
    chunk = next(c for c in chunker.chunk_text(text, "guide.md") if c.heading_path[1:])
    assert chunk.embed_text.startswith("Guide\n\n")
    assert chunk.heading_path == ["Guide", "<!-- md:setting toc -->"]  # the headings as written


def test_a_comment_holding_a_code_span_closes_on_its_line_and_an_unclosed_one_mid_line_is_text():
    dialect = Dialect(frozenset({"mkdocs"}))
    lines = ["<!-- md:default `material/tags` -->", "", "Use this setting.", "A literal <!-- in prose.", "Shown."]
    assert read_lines(lines, dialect).lines == [None, "", "Use this setting.", "A literal <!-- in prose.", "Shown."]


def test_a_construct_named_in_a_code_span_is_no_syntax_left():
    assert leftover_syntax("Embed files with the `--8<--` notation.", ["mkdocs"]) == []
    assert leftover_syntax("Embed files:\n--8<-- \"x.md\"", ["mkdocs"]) == ["mkdocs"]


def test_html_reads_as_the_page_shows_it():
    """Every site renders HTML: a wrapper's tags show nothing, a text element shows its text, an
    admonition's class marks it, an opening tag over several lines shows none of its attributes.
    An image stays (it is a screenshot), and so does what a code span names."""
    dialect = Dialect(frozenset({"mkdocs"}))
    lines = ['<div class="grid cards" markdown>', "", "- **Fast**", "", "</div>",
             '<div class="admonition warning">', "<h5>Back up <em>first</em></h5>", "</div>",
             '<p align="center"><img src="/img/home.png" alt="Home"></p>',
             "Press <kbd>Ctrl</kbd>+<kbd>K</kbd>, then run <code>serve</code>.<br>",
             "Write `<div markdown>` around a grid. Send an email to <a", '  href="mailto:x@example.com">us</a>.',
             "<table><tr><td>one</td><td>two</td></tr></table>", '> [!TIP] In-page targets <a id="tip"></a>']
    assert read_lines(lines, dialect).lines == [
        None, "", "- **Fast**", "", None, "Warning: Back up first", None, None, '<img src="/img/home.png" alt="Home">',
        "Press Ctrl+K, then run `serve`.", "Write `<div markdown>` around a grid. Send an email to", "us.", "one two",
        "> Tip: In-page targets"]
    assert read_lines(lines, Dialect(frozenset())).lines == lines  # a folder without a dialect reads as written
    # HTML left in a reading counts as syntax left; an image, a code span or a comparison does not
    assert leftover_syntax("Press <kbd>Ctrl</kbd>.", ["mkdocs"]) == ["mkdocs"]
    assert leftover_syntax('Text\n<div class="grid">\nMore', ["hugo"]) == ["hugo"]
    assert leftover_syntax('<img src="/img/a.png"> and `<div>` when a <b or x < y', ["mkdocs"]) == []


def test_a_line_of_several_shortcodes_reads_as_each_on_its_own_line():
    lines = ["{{< tabpane >}}", '{{< tab header="A" lang="sh" >}}', "run a",
             '{{< /tab >}} {{< tab header="B" lang="sh" >}}', "run b", "{{< /tab >}}", "{{< /tabpane >}}",
             '{{% alert title="Mind" %}} Keep **two** copies. {{% /alert %}}']
    assert read_lines(lines, Dialect(frozenset({"hugo"}))).lines == [
        None, "A:\n```sh", "run a", "```\nB:\n```sh", "run b", "```", None, "Warning: Mind Keep **two** copies."]


def test_a_tab_of_a_text_tab_pane_holds_markdown_not_code():
    lines = ["{{< tabpane text=true >}}", '{{% tab header="A" lang="yaml" %}}', "```yaml", "a: 1", "```",
             "{{% /tab %}}", "{{< /tabpane >}}", '{{< tab header="B" lang="yaml" >}}', "b: 2", "{{< /tab >}}"]
    reading = read_lines(lines, Dialect(frozenset({"hugo"})), keep_states=True)
    assert reading.lines == [None, "A:", "```yaml", "a: 1", "```", None, None, "B:\n```yaml", "b: 2", "```"]
    assert reading.states[6].fence is None and reading.states[8].fence == "{{<"  # the pane's end ends its say


def test_a_tab_takes_its_panes_code_language_and_its_comments_are_no_headings():
    lines = ['{{< tabpane lang="toml" >}}', '{{< tab header="**Example**:" disabled=true />}}',
             '{{< tab header="Windows" >}}', "# Use single quotes for paths", "Folder = 'C:\\Music'", "{{< /tab >}}",
             '{{< tab header="macOS" lang="ini" >}}', "Folder = /Music", "{{< /tab >}}", "{{< /tabpane >}}",
             '{{< tab header="Later" >}}', "# A heading again", "{{< /tab >}}"]
    assert read_lines(lines, Dialect(frozenset({"hugo"}))).lines == [
        None, "**Example**:", "Windows:\n```toml", "# Use single quotes for paths", "Folder = 'C:\\Music'", "```",
        "macOS:\n```ini", "Folder = /Music", "```", None, "Later:", "# A heading again", None]


def test_a_shortcode_over_lines_in_a_paragraph_reads_where_it_closes():
    dialect = Dialect(frozenset({"hugo"}))
    lines = ['Ask the {{< sitevar name="product"', 'nojs="Tool" >}} team, or the {{%', 'param "desk" %}} desk.',
             "Type `{{< tab` to start one.", '{{% alert', 'title="Mind" %}} Keep two copies.']
    reading = read_lines(lines, dialect, keep_states=True)
    assert reading.lines == ["Ask the", "Tool team, or the", "desk desk.", "Type `{{< tab` to start one.", None,
                             "Warning: Mind Keep two copies."]
    assert read_fragment("\n".join(lines[1:3]), dialect, state=reading.states[1]) == "Tool team, or the\ndesk desk."


def test_a_code_fence_in_a_list_item_ends_with_the_item():
    dialect = Dialect(frozenset({"docusaurus"}))
    lines = ["1. Map it:", "", "   ```jsonnet", "   local a = 1;", "", "   a", ":::tip", "", "Body.", "", ":::",
             "- Also:", "  ```", "code", "  ```", "", "  ```", "A paragraph."]
    reading = read_lines(lines, dialect, keep_states=True)
    assert reading.lines[5:11] == ["   a", "   ```\nTip:", "", "Body.", "", None]
    # the second item ends at `code` (a paragraph after the list): the fence after it is not in an item
    assert reading.lines[13:] == ["  ```\ncode", "  ```", "", "  ```", "A paragraph."]
    assert read_fragment("\n".join(lines[5:9]), dialect, state=reading.states[5]) == "```\n   a\n   ```\nTip:\n\nBody."
