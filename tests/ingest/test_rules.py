"""The chunking rules, one behaviour per test (the golden files pin the exact output)."""
from pathlib import Path

from ingest.chunk import RECORD_FIELDS, chunk_uuid

DATA = Path(__file__).parent / "data"


def chunks_of(chunker, name):
    return chunker.chunk_path(DATA / name, DATA).chunks


def test_record_has_exactly_the_contract_fields(chunker):
    for chunk in chunks_of(chunker, "structure.md"):
        record = chunk.to_record()
        assert tuple(record) == RECORD_FIELDS
        assert record["chunk_id"] and record["group_id"]
        assert isinstance(record["heading_path"], list) and isinstance(record["images"], list)


def test_hash_lines_in_code_are_never_headings(chunker):
    paths = {tuple(c.heading_path) for c in chunks_of(chunker, "structure.md")}
    flat = {h for path in paths for h in path}
    assert "this is a comment, not a heading" not in flat
    assert "not a heading either" not in flat
    assert "indented code is not a heading" not in flat
    assert "with a hash line inside the quote" not in flat


def test_front_matter_is_not_text_and_its_title_names_the_file(chunker):
    chunks = chunks_of(chunker, "structure.md")
    assert all("sidebar_position" not in c.text for c in chunks)
    note = chunks[0]
    assert note.chunk_type == "note" and note.heading_path == []
    assert note.embed_text.startswith("Structure Guide\n\n")
    installing = next(c for c in chunks if c.heading_path == ["Installing {#install}"])
    assert installing.embed_text.startswith("Structure Guide > Installing\n\n")


def test_explicit_ids_setext_and_skipped_levels(chunker):
    chunks = chunks_of(chunker, "structure.md")
    paths = [c.heading_path for c in chunks]
    # the heading path holds the heading as written, explicit id included (a path taken from the
    # source file matches it); the breadcrumb that is embedded shows what the page shows
    installing = next(c for c in chunks if c.heading_path == ["Installing {#install}"])
    assert installing.embed_text.startswith("Structure Guide > Installing\n\n")
    assert "{#" not in installing.embed_text.split("\n", 1)[0]
    assert ["Setext Heading"] in paths
    skipped = next(c for c in chunks if c.heading_path[-1:] == ["Skipped Level"])
    assert skipped.heading_path == ["Setext Heading", "Skipped Level"]
    assert skipped.chunk_type == "subsection"


def test_blocks_kept_as_written(chunker):
    text = "\n".join(c.text for c in chunks_of(chunker, "structure.md"))
    for expected in ('<div class="callout">', "> # with a hash line inside the quote", ":::note",
                     "!!! warning", "    - deeper item", "| Name | The display name |",
                     "![The settings screen](./img/settings.png)"):
        assert expected in text


def test_images_in_order_as_written(chunker):
    skipped = next(c for c in chunks_of(chunker, "structure.md") if c.heading_path[-1:] == ["Skipped Level"])
    assert skipped.images == ["./img/settings.png", "/img/banner.png"]


def test_all_four_chunk_types(chunker):
    types = {c.chunk_type for name in ("structure.md", "merge.md", "notes-only.md") for c in chunks_of(chunker, name)}
    assert types == {"section", "subsection", "merged", "note"}


def test_short_children_fold_into_their_parent(chunker):
    chunks = chunks_of(chunker, "merge.md")
    assert [c.chunk_type for c in chunks] == ["merged"]
    assert "### Types" in chunks[0].text and "## Actions" in chunks[0].text


def test_large_children_stand_alone_and_a_bare_title_opens_its_first_child(chunker):
    body = " ".join(["Each sentence here adds a handful of tokens to the section."] * 20)
    text = f"# Guide\n\n## Part One\n\n{body}\n\n## Part Two\n\n{body}\n"
    chunks = chunker.chunk_text(text, "guide.md")
    groups = {c.group_id: c for c in chunks}
    first = [c for c in groups.values() if c.heading_path == ["Guide", "Part One"]]
    assert first and all(c.chunk_type == "subsection" for c in first)
    opening = next(c for c in chunks if c.heading_path == ["Guide", "Part One"] and c.part_index == 1)
    assert opening.text.startswith("# Guide\n\n## Part One")
    assert opening.line_start == 1
    assert not any(c.heading_path == ["Guide"] for c in chunks)


def test_split_table_repeats_its_header(chunker):
    parts = [c for c in chunks_of(chunker, "long.md") if c.heading_path[-1:] == ["Big Table"]]
    assert len(parts) > 1
    assert [p.part_index for p in parts] == list(range(1, len(parts) + 1))
    assert all(p.part_count == len(parts) for p in parts)
    for part in parts:
        assert "| Option | Default | Meaning |\n| --- | --- | --- |" in part.text
        assert part.embed_text.endswith(f"(part {part.part_index} of {part.part_count})")
    assert len({p.group_id for p in parts}) == 1


def test_short_fence_is_never_cut_but_an_oversized_one_is(chunker):
    chunks = chunks_of(chunker, "long.md")
    fence = "\n".join(f"value_{i} = compute({i})  # step {i}" for i in range(12))
    assert any(fence in c.text for c in chunks)
    logs = [c for c in chunks if "log line" in c.text]
    assert len(logs) > 1  # 60 log lines do not fit one part: the fence alone is too long


def test_parts_overlap_their_predecessor(chunker):
    parts = [c for c in chunks_of(chunker, "long.md") if c.heading_path[-1:] == ["Long Paragraph"]]
    assert len(parts) > 2
    for before, after in zip(parts, parts[1:]):
        head = after.text[:40]
        assert head in before.text, "each part opens with the end of the one before"


def test_no_embed_text_over_the_limit_and_counts_are_exact(chunker):
    for name in ("long.md", "structure.md", "merge.md", "ui.md"):
        for chunk in chunks_of(chunker, name):
            assert chunk.token_count <= chunker.limit
            assert chunk.token_count == chunker.counter.count(chunk.embed_text)


def test_line_ranges_point_at_the_source(chunker):
    lines = (DATA / "structure.md").read_text(encoding="utf-8").split("\n")
    for chunk in chunks_of(chunker, "structure.md"):
        assert chunk.text == "\n".join(lines[chunk.line_start - 1:chunk.line_end])


def test_content_kind_rules(chunker):
    ui = chunks_of(chunker, "ui.md")
    assert [c.content_kind for c in ui] == ["screen", "prose"]
    assert "screenshot" in ui[0].content_kind_reason
    override = chunks_of(chunker, "screen.md")
    assert {c.content_kind for c in override} == {"prose"}
    assert all(c.content_kind_reason == "front matter override" for c in override)


def test_crlf_and_bom_change_nothing(chunker):
    plain = (DATA / "structure.md").read_bytes()
    windows = b"\xef\xbb\xbf" + plain.replace(b"\n", b"\r\n")
    a = chunker.chunk_bytes(plain, "structure.md")
    b = chunker.chunk_bytes(windows, "structure.md")
    assert [c.to_record() for c in a.chunks] == [c.to_record() for c in b.chunks]
    assert b.warnings == []
    assert a.sha256 != b.sha256  # the file hash is of the bytes: a re-saved file is re-ingested


def test_bytes_that_are_not_utf8_are_replaced_with_a_warning(chunker):
    raw = "# Café\n\nPrix: 5 €\n".encode("cp1252")
    chunked = chunker.chunk_bytes(raw, "menu.md")
    assert len(chunked.warnings) == 1 and "menu.md" in chunked.warnings[0]
    assert "\ufffd" in chunked.chunks[0].text
    assert "Prix: 5" in chunked.chunks[0].text


def test_empty_and_blank_files_give_no_chunks(chunker):
    assert chunker.chunk_bytes(b"", "empty.md").chunks == []
    assert chunker.chunk_bytes(b"\n \n\t\n", "blank.md").chunks == []
    assert chunker.chunk_bytes(b"---\ntitle: Only\n---\n", "fm.md").chunks == []


def test_malformed_markdown_loses_nothing(chunker):
    text = "# Open fence\n\n```python\nprint('never closed')\n## not a heading\n\n| a | b\n|--\n<div>\n"
    chunks = chunker.chunk_text(text, "broken.md")
    joined = "\n".join(c.text for c in chunks)
    for line in text.split("\n"):
        assert line in joined
    assert [c.heading_path for c in chunks] == [["Open fence"]]
    bad_front_matter = chunker.chunk_bytes(b"---\ntitle: [unclosed\n---\n# T\n\nbody\n", "fm.md")
    # not valid YAML: not front matter, so its lines are content like every other line
    kept = "\n".join(c.text for c in bad_front_matter.chunks).split("\n")
    assert bad_front_matter.warnings and kept[:2] == ["---", "title: [unclosed"] and "# T" in kept


def test_huge_file(chunker):
    section = "## Section {n}\n\n" + " ".join(["A long paragraph sentence about budgets."] * 60) + "\n\n"
    text = "# Huge\n\n" + "".join(section.format(n=n) for n in range(300))
    chunks = chunker.chunk_text(text, "huge.md")
    assert len(text.encode()) > 700_000
    assert max(c.token_count for c in chunks) <= chunker.limit
    assert len({c.group_id for c in chunks}) == 300  # the bare "# Huge" title opens section 0


def test_ids_are_stable_and_local(chunker):
    original = (DATA / "long.md").read_text(encoding="utf-8")
    first = chunker.chunk_text(original, "long.md")
    again = chunker.chunk_text(original, "long.md")
    assert [c.chunk_id for c in first] == [c.chunk_id for c in again]
    edited = original.replace("A short fence must stay whole:", "A short fence, edited, must stay whole:")
    after = chunker.chunk_text(edited, "long.md")
    unchanged = {c.chunk_id for c in first if c.heading_path[-1:] != ["Code"]}
    assert unchanged <= {c.chunk_id for c in after}
    elsewhere = chunker.chunk_text(original, "other/long.md")
    assert not {c.chunk_id for c in elsewhere} & {c.chunk_id for c in first}
    assert chunk_uuid(first[0].chunk_id) == chunk_uuid(again[0].chunk_id)


def test_two_process_output_is_the_one_process_output(tmp_path, monkeypatch, capsys):
    """`fieldguide chunks` shares a big folder between two processes; the lines, their order
    and the warnings must not depend on it."""
    import argparse

    from fieldguide.commands import chunks as command

    for index, name in enumerate(sorted(p.name for p in DATA.glob("*.md"))):
        (tmp_path / f"{index:02d}-{name}").write_bytes((DATA / name).read_bytes())
    (tmp_path / "zz-bad.md").write_bytes(b"# Caf\xe9\n\nlatin-1 bytes\n")
    for name in ("FIELDGUIDE_OVERLAP_TOKENS", "FIELDGUIDE_MERGE_MAX_TOKENS", "FIELDGUIDE_MERGE_CHILD_MAX_TOKENS",
                 "FIELDGUIDE_TOKEN_LIMIT_FRACTION", "FIELDGUIDE_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    args = argparse.Namespace(docs_dir=tmp_path, debug=False)

    monkeypatch.setattr(command, "FORK_MIN_BYTES", 10**12)
    assert command.run(args) == 0
    alone = capsys.readouterr()
    monkeypatch.setattr(command, "FORK_MIN_BYTES", 1)
    monkeypatch.setattr(command, "_can_fork", lambda: True)
    monkeypatch.setattr(command, "ROUND_BYTES", 4096)  # several rounds
    assert command.run(args) == 0
    shared = capsys.readouterr()
    assert alone.out.count("\n") > 20
    assert shared.out == alone.out
    assert "zz-bad.md" in shared.err and shared.err.count("warning:") == alone.err.count("warning:")


def test_each_chunk_names_the_chunk_holding_its_parents_own_text(chunker):
    """`parent_group_id` follows the heading tree, not the heading names: a file that repeats a
    heading gives each child its own parent, and a parent with no text of its own (a bare title
    opening its first child's chunk) gives none rather than a same-named section above."""
    body = " ".join(f"word{i}" for i in range(80))
    text = (f"# Guide\n\nAbout the guide.\n\n## Setup\n\nFirst setup intro.\n\n### Step\n\n{body}\n\n"
            f"## Setup\n\n### Step\n\n{body}\n\n## Other\n\nOther intro.\n\n### Step\n\n{body}\n")
    chunks = chunker.chunk_text(text, "repeat.md")
    named = [(c.heading_path, c.text.splitlines()[0], c.parent_group_id) for c in chunks]
    guide, setup, first_step, bare_step, other, other_step = chunks
    assert [c.chunk_type for c in chunks] == ["section", "subsection", "subsection", "subsection", "subsection",
                                              "subsection"], named
    assert guide.parent_group_id == ""
    assert setup.parent_group_id == guide.group_id and other.parent_group_id == guide.group_id
    assert first_step.parent_group_id == setup.group_id
    assert bare_step.text.startswith("## Setup") and bare_step.parent_group_id == ""
    assert other_step.parent_group_id == other.group_id
    assert all(c.to_record()["parent_group_id"] == c.parent_group_id for c in chunks)
