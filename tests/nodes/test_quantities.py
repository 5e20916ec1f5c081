"""Questions that ask for a figure, and whether quotes hold one (`fieldguide.quantities`)."""
from __future__ import annotations

import pytest

from fieldguide.quantities import AMOUNT, COUNT, DURATION, FREQUENCY, asked_figure, holds_figure


@pytest.mark.parametrize("question, kind", [
    ("How long are old logs kept before they get rotated?", DURATION),
    ("And how long are old logs kept?", DURATION),
    ("Once I fix that, how long until I'm moved back to the full one?", DURATION),
    ("With a 30-second period and skew set to 2, for how long is a code accepted?", DURATION),
    ("How is that different? How many of those does it keep?", COUNT),
    ("If one request creates three items at once, how many times does the flow run?", COUNT),
    ("Roughly how much does it cost per page?", AMOUNT),
    ("Also, roughly how much memory should the server have?", AMOUNT),
    ("So how often does the sync run?", FREQUENCY),
])
def test_a_question_whose_ask_opens_with_a_figure_asks_for_one(question, kind):
    assert asked_figure(question) == kind


@pytest.mark.parametrize("question", [
    "Which setting controls how long I stay logged in?",  # asks for a setting
    "Where do I limit how many campaign emails go out per hour?",  # asks for a place
    "Is there a single command that shows me, per log file, how many lines were read?",  # asks yes or no
    "How long. That is what I said.",  # no sentence asks
    "How do I keep old logs?",
    "Wie lange werden Protokolle aufbewahrt?",  # another language: no figure read
])
def test_a_question_that_asks_for_something_else_asks_for_no_figure(question):
    assert asked_figure(question) is None


def test_any_digit_is_a_figure_of_every_kind():
    for kind in (DURATION, COUNT, AMOUNT, FREQUENCY):
        assert holds_figure(kind, "The default is 8760h.")
        assert holds_figure(kind, "Set it to 4GB.")
        assert not holds_figure(kind, "Logs are written to stdout and stderr.")


def test_figures_in_words_count_for_their_own_kind():
    assert holds_figure(DURATION, "Share links stay valid for a year.")
    assert holds_figure(DURATION, "Entries are kept until you delete them.")
    assert holds_figure(DURATION, "Backups are kept forever.")
    assert holds_figure(COUNT, "The flow runs once for each item.")
    assert holds_figure(COUNT, "You can add three steps.")
    assert holds_figure(COUNT, "There is no limit on members.")
    assert holds_figure(FREQUENCY, "The sync runs every night.")
    assert holds_figure(AMOUNT, "The plan costs $4 a month.")
    assert holds_figure(AMOUNT, "It is free of charge.")


def test_words_that_only_look_like_figures_do_not_count():
    # "one-time", "one of": a determiner; "once" says nothing of how long; "free tier" names no sum
    assert not holds_figure(DURATION, "Prevents reuse of One-Time Password codes used more than once.")
    assert not holds_figure(COUNT, "Pick one of the options.")
    assert not holds_figure(AMOUNT, "This is a paid service with a free tier and a single document limit.")
