"""Questions that ask for a figure, and whether a text holds one.

"How long are old logs kept?", "How many backups does it keep?", "How much does it cost per
page?", "How often does the sync run?" are answered by a figure: a duration, a count, an amount,
a frequency. Quotes that hold no figure of that kind do not answer them, however many of the
question's words they hold: the logging section that says where the logs go and how to set
their level names "logs" and "kept" but not for how long. `asked_figure` reads which kind a
question asks for; `holds_figure` whether a text holds one. English only, like the reader's
words they look for; a question in another language asks for no figure here.

A figure is read generously, since missing one flags an answer the docs do give: any digit
("8760h", "30", "4GB"), a number word ("three", "once", "a dozen"), and for a duration also "an
hour", "a year", "forever", "until …", "never expire", "daily". "One" in "one-time" and "one
of" counts nothing.
"""
from __future__ import annotations

import re

from fieldguide.content_words import question_sentences

DURATION, COUNT, AMOUNT, FREQUENCY = "duration", "count", "amount", "frequency"
KINDS = {"long": DURATION, "many": COUNT, "much": AMOUNT, "often": FREQUENCY}

# The sentence's ask opens with the figure: "How long …?", "And roughly how many …?", "For how
# long …?", or after a clause that sets the scene: "If I create three items at once, how many …?",
# "Once I fix that, how long until …?"
# "Which setting controls how long …" asks for a setting, "Where do I set how many …" for a place:
# those are read as the ask they open with, and ask for no figure.
_LEAD = r"(?:(?:and|so|also|but|then|ok|okay|roughly|about|approximately|exactly|just|for)[,\s]+)*"
_FIGURE = rf"{_LEAD}how\s+(long|many|much|often)\b"
_ASKS = re.compile(rf"^{_FIGURE}|^(?:if|when|once|with|after|since|given|assuming|suppose|say)\b[^,?]*,\s*{_FIGURE}",
                   re.IGNORECASE)

_NUMBER_WORDS = (
    "zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    "seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|hundreds|"
    "thousand|thousands|million|millions|billion|dozen|dozens")
_DIGIT = re.compile(r"\d")
# "one-time password", "one of the", "one or more": "one" as a determiner, not a figure
_COUNT = re.compile(rf"\b(?:{_NUMBER_WORDS}|once|twice|single|several|unlimited|infinite|no limit|any number)\b"
                    r"(?![-\s](?:time|of|or|another)\b)", re.IGNORECASE)
_TIME_UNITS = r"(?:milli)?seconds?|minutes?|hours?|days?|weeks?|months?|years?|nights?|decades?"
_DURATION = re.compile(
    rf"\b(?:an?|{_NUMBER_WORDS}|few|several|many)\s+(?:\w+\s+)?(?:{_TIME_UNITS})\b|"
    r"\b(?:forever|indefinitely|permanently|until|never\s+expires?|never\s+deleted|no\s+expiry|"
    r"hourly|daily|weekly|monthly|yearly|annually|nightly)\b", re.IGNORECASE)
_FREQUENCY = re.compile(
    rf"\b(?:every|each|per|once|twice|hourly|daily|weekly|monthly|yearly|annually|nightly|continuously|cron|"
    rf"schedule[ds]?|interval)\b|\b(?:an?)\s+(?:{_TIME_UNITS})\b", re.IGNORECASE)
_CURRENCY = re.compile(r"[$€£¥₹]|\b(?:usd|eur|gbp|free of charge|no cost|at no charge|for free)\b", re.IGNORECASE)
# What, besides a digit, holds a figure of each kind: a duration is a span of time or a word that
# says it has none; an amount is a sum of money.
_HOLDS = {DURATION: _DURATION, COUNT: _COUNT, AMOUNT: _CURRENCY, FREQUENCY: _FREQUENCY}


def asked_figure(question: str) -> str | None:
    """The kind of figure the question's own ask opens with (`DURATION`, `COUNT`, `AMOUNT`,
    `FREQUENCY`), or None. Every asking sentence (ending "?") is read; the first that opens
    with a figure names it."""
    for sentence in question_sentences(question):
        if not sentence.rstrip().endswith("?"):
            continue
        if m := _ASKS.search(sentence.strip()):
            return KINDS[(m.group(1) or m.group(2)).lower()]
    return None


def holds_figure(kind: str, text: str) -> bool:
    """Whether `text` holds a figure that could answer a question asking for `kind`: any digit, or
    a figure of that kind in words."""
    return bool(_DIGIT.search(text) or _HOLDS[kind].search(text))
