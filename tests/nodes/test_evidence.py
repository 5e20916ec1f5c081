"""Quotable units and the evidence chosen from them: verbatim, cited, the best match with the
neighbours that complete it."""
from fakes import FakeEmbeddings
from nodes.condense import condense_by_rules
from nodes.evidence import (asks, asks_for_a_list, choose, evidence_budget, evidence_markdown, score_units,
                            select_evidence, unit_words)
from nodes.quotable import context_units, split_sentences, split_units

TABLE_DOC = """## Booking form fields

The booking form is where a booking is made.

| Field | What it holds |
| --- | --- |
| Boat | The boat being booked. |
| Life jackets | The number of life jackets handed out. |
| Skipper | Licensed staff who are free on the booking's dates. |

![The form](images/booking-form.svg)
"""

STEPS_DOC = """## Closing an account

To close an account, follow these steps:

1. Open the account in the sidebar.
2. Click the three dots to show the actions menu.
3. Select **Close Account**.

A closed account stays under **Closed Accounts** in the sidebar. It can be reopened there.
"""


def block(text, n=1, heading=("Guide",), score=0.9, **extra):
    return {"chunk_id": f"c{n}", "group_id": f"c{n}", "part_index": 1, "part_count": 1, "source": f"doc{n}.md",
            "heading_path": list(heading), "text": text, "rerank_score": score, "line_start": 1, "line_end": 9,
            **extra}


def test_units_are_sentences_items_rows_and_code_and_skip_headings_and_images():
    units = split_units(TABLE_DOC + "\n```\ncode line\n```\n\n- one item\n  continued\n- two\n", label="Form")
    kinds = [(u.kind, u.text) for u in units]
    assert kinds[0] == ("sentence", "The booking form is where a booking is made.")
    assert ("row", "| Life jackets | The number of life jackets handed out. |") in kinds
    assert ("code", "```\ncode line\n```") in kinds
    assert ("item", "- one item continued") in kinds
    assert not any("Booking form fields" in text or "images/" in text for _, text in kinds)
    row = next(u for u in units if u.kind == "row")
    assert row.header == "| Field | What it holds |\n| --- | --- |"
    assert row.label == "Booking form fields"  # the heading above it, not the block's own


def test_lines_of_html_tags_alone_are_decoration_but_inline_tags_stay_in_their_sentence():
    units = split_units('<div class="browser">\n\n![x](y.png)\n\n</div>\n\nPress <Key k="enter" /> to save.\n<br />')
    assert [u.text for u in units] == ['Press <Key k="enter" /> to save.']


def test_sentences_do_not_split_after_abbreviations():
    assert split_sentences("Pick a file, e.g. Bank.csv from the bank. Then press Import.") == [
        "Pick a file, e.g. Bank.csv from the bank.", "Then press Import."]


def test_a_field_question_quotes_the_fields_own_row_under_its_header():
    blocks = [block(TABLE_DOC, heading=("Booking form",))]
    units = select_evidence("Which field holds the number of life jackets?", blocks, 12)
    markdown = evidence_markdown(units)
    assert "| Life jackets | The number of life jackets handed out. |" in markdown
    assert markdown.startswith("> | Field | What it holds |\n> | --- | --- |")
    assert markdown.endswith(">\n> [1]")  # a marker line under a table would be read as a row


def test_a_unit_announcing_a_list_brings_the_list_and_a_pointer_back_brings_its_antecedent():
    blocks = [block(STEPS_DOC, heading=("Accounts", "Closing an account"))]
    units = select_evidence("How do I close an account?", blocks, 80)
    texts = [u.text for u in units]
    assert texts[:4] == ["To close an account, follow these steps:", "1. Open the account in the sidebar.",
                         "2. Click the three dots to show the actions menu.", "3. Select **Close Account**."]
    later = select_evidence("Can a closed account be reopened?", blocks, 20)
    assert [u.text for u in later][-2:] == ["A closed account stays under **Closed Accounts** in the sidebar.",
                                            "It can be reopened there."]


def test_evidence_is_verbatim_and_every_passage_ends_with_its_block_number():
    blocks = [block("Unrelated words about weather.", 1, score=0.2),
              block("Overspending is taken from next month's budget. Money left over rolls over.", 2)]
    vectors = FakeEmbeddings()
    units = select_evidence("What happens to overspending next month?", blocks, 40,
                            vectors.embed_query("What happens to overspending next month?"), vectors.embed_documents)
    markdown = evidence_markdown(units)
    assert "> Overspending is taken from next month's budget." in markdown and "[2]" in markdown
    assert "weather" not in markdown
    for passage in markdown.split("\n\n"):
        assert passage.rstrip().endswith("]")


def test_the_budget_holds_but_the_best_unit_is_always_quoted():
    long_sentence = "Overspending " + " ".join(["word"] * 80) + "."
    blocks = [block(long_sentence + " Overspending again here.")]
    units = select_evidence("overspending", blocks, 10)
    assert units and units[0].text == long_sentence  # over the budget alone, still the best


def test_a_question_in_two_parts_gets_both_parts():
    text = ("The merged transaction keeps the imported payee. " + "Filler sentence number one here. " * 3
            + "Deleted categories move their balance to another category.")
    blocks = [block(text)]
    units = select_evidence("What happens to the payee, and where does the balance of deleted categories go?",
                            blocks, 30)
    joined = " ".join(u.text for u in units)
    assert "imported payee" in joined and "balance to another category" in joined


def test_each_further_ask_of_a_question_adds_a_quarter_of_a_budget():
    assert asks("How do I create a funnel?") == 1
    assert evidence_budget("How do I create a funnel?", 120) == 120
    two = "Where do I create a checkout funnel, and is there a limit to how many steps I can add?"
    assert asks(two) == 2 and evidence_budget(two, 120) == 150
    assert asks("Where is the export? What does it hold?") == 2
    assert asks("Where is the export? And what does it hold?") == 2
    assert asks("Why? How? Where? When? What?") == 3  # capped: a list of asks is not a request for the page
    # the rest of a word ("android", "order") is no conjunction, and a statement asks once
    assert asks("Does the android app order transactions by date") == 1


def test_a_carried_topic_asks_nothing():
    standalone, how = condense_by_rules("And how do I turn it off?", "How do I turn on auto hold?",
                                        ["Budget", "Automatic Holding of Funds? Or not?"])
    assert how == "rules"
    assert asks(standalone) == 1


def test_units_nobody_can_quote_are_never_chosen():
    blocks = [block("3.\n\n[link](x)\n\nThe export button downloads a file.")]
    scored = score_units("export button", context_units(blocks), blocks)
    assert [u.text for u in choose(scored, 50)] == ["The export button downloads a file."]


def test_an_announced_list_is_followed_into_the_next_part_of_its_section():
    first = block("Two transactions are merged into one. The following logic decides which one is kept:",
                  1, heading=("Merging",), group_id="m", part_index=1, part_count=2)
    second = block("1. The synced transaction is kept.\n2. Otherwise the earlier one is kept.", 2,
                   heading=("Merging",), score=None, group_id="m", part_index=2, part_count=2)
    units = select_evidence("Which transaction is kept when two are merged?", [first, second], 60)
    texts = [u.text for u in units]
    assert texts[-2:] == ["1. The synced transaction is kept.", "2. Otherwise the earlier one is kept."]
    assert evidence_markdown(units).count("[2]") == 1


def test_the_budget_counts_the_words_a_reader_counts():
    """Quoting costs content words: a table's pipes and numbers, "the", "is" and a link's target cost
    nothing, so the budget is the answer's length as the length target counts it."""
    from fieldguide.content_words import content_word_count

    assert content_word_count("| Category | Amount |\n| --- | ---: |\n| Savings | 50 |") == 3
    assert content_word_count("The export is in the [settings page](../settings/export-and-backup.md#export).") == 3
    assert content_word_count("Schedules can be posted early.") == 3
    # in other scripts every word counts, so the budget still binds on docs written in them
    assert content_word_count("Öffnen Sie die Einstellungen") == 4
    assert content_word_count("设置页面") == 4
    row = next(u for u in split_units(TABLE_DOC, label="Form") if u.kind == "row")
    assert row.kind == "row" and unit_words(row) == content_word_count(row.text) < len(row.text.split())


ACTIONS_DOC = """## Mail rule actions

After the attachments are consumed, the rule does one of these to the mail:

- Delete: Immediately deletes the mail.
- Move to folder: Moves the mail to a folder you name.
- Mark as read: Marks the mail as read and leaves it where it is.
- Flag: Sets a flag on the mail.
- Tag: Adds a tag you choose.
- Archive: Moves the mail to the archive.
- Forward: Sends the mail on to an address.
- Keep: Leaves the mail untouched.

The default action is the mildest one.
"""


def test_a_question_for_which_things_exist_is_told_from_one_for_a_single_thing():
    for question in ("Which placeholders can I use in the filename format?",
                     "What environment variables control the machine-learning container?",
                     "What are the different things a rule can do to a mail?",
                     "Which log levels can I set?", "What details does the activity log keep?",
                     "Are there other layouts available?",
                     "And which file types for exporting? \u2014 about: Import Items"):
        assert asks_for_a_list(question), question
    for question in ("What happens to the money in it?", "What does the Global Stream show?", "Which one wins?",
                     "What is the difference between the two?", "How do I delete a category?",
                     "What status does it get?", "What permission controls who I can mention?",
                     "Why is it off? \u2014 about: Options and settings"):  # the carried topic asks nothing
        assert not asks_for_a_list(question), question


def test_a_list_question_gets_the_whole_list_and_a_single_question_its_best_items():
    blocks = [block(ACTIONS_DOC, heading=("Mail", "Mail rule actions"))]
    whole = [u.text for u in select_evidence("What are the different actions a mail rule can take?", blocks, 20)]
    assert whole[0].endswith("one of these to the mail:")
    assert [t.split(":")[0] for t in whole[1:]] == ["- Delete", "- Move to folder", "- Mark as read", "- Flag", "- Tag",
                                                 "- Archive", "- Forward", "- Keep"]
    one = [u.text for u in select_evidence("How do I get a mail rule to mark the mail as read?", blocks, 20)]
    assert "- Mark as read: Marks the mail as read and leaves it where it is." in one
    assert not any(t.startswith("- Tag") for t in one)


def test_a_whole_table_is_quoted_with_its_header_for_a_list_question():
    blocks = [block(TABLE_DOC, heading=("Booking form fields",))]
    units = select_evidence("Which fields does the booking form hold?", blocks, 10)
    assert [u.kind for u in units].count("row") == 3
    assert "| Field | What it holds |" in evidence_markdown(units)
