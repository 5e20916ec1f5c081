"""The coverage verdict: the signals it reads from the quotes, its rules, and the partial answer's preface."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from fieldguide.near_words import near_credit, near_share, stand_ins
from nodes.coverage import (COVERED, NOT_COVERED, PARTIAL, THRESHOLDS, Signals, coverage, grounding, idf_of,
                            partial_preface, question_words, settled_without_near, signals, verdict, whether_clause)

# An index of 100 chunks: "booking" and "price" are common, "deposit" rare, "cryptocurrency" in none.
DF = {"booking": 40, "bookings": 5, "price": 30, "pay": 20, "deposit": 3, "card": 10, "form": 25, "dropbox": 0,
      "export": 8, "skipper": 2}
N = 100
PRICE_BLOCK = {"heading_path": ["Bookings", "Price"], "text": "The price of a booking is the day rate plus the "
               "skipper fee. A deposit is taken from the card."}
QUOTE = [{"n": 1, "kind": "sentence", "text": "The price of a booking is the day rate plus the skipper fee.",
          "header": None, "label": "Price"}]


def test_question_words_leave_out_stop_words_numbers_and_repeats():
    assert question_words("How do I pay for 2 bookings, and can I pay by card?") == ["pay", "bookings", "card"]


def test_idf_reads_the_most_frequent_form_and_a_word_no_chunk_holds_weighs_most():
    assert idf_of("bookings", DF, N) == idf_of("booking", DF, N)  # the singular is the common form
    assert idf_of("cryptocurrency", DF, N) > idf_of("deposit", DF, N) > idf_of("booking", DF, N)
    assert idf_of("anything", None, 0) == 1.0  # no statistics: every word weighs the same


def test_the_share_held_weighs_each_question_word_by_its_rarity():
    from fieldguide.content_words import held_share

    booking, crypto = idf_of("booking", DF, N), idf_of("cryptocurrency", DF, N)
    assert held_share("Can I pay for a booking with cryptocurrency?", {"booking", "pay"}, DF, N) == pytest.approx(
        (booking + idf_of("pay", DF, N)) / (booking + idf_of("pay", DF, N) + crypto))
    assert held_share("Can I?", set(), DF, N) == 1.0  # nothing asked: nothing lacking


def test_a_question_whose_rare_word_the_quotes_lack_is_missing_it():
    s = signals("Can I pay for a booking with cryptocurrency?", QUOTE, [PRICE_BLOCK], DF, N)
    assert s.missing[0] == "cryptocurrency" and s.missing_idf == pytest.approx(1.0)
    assert s.unknown_words == ["cryptocurrency"]
    weights = {w: idf_of(w, DF, N) for w in ("pay", "booking", "cryptocurrency")}
    assert s.found == pytest.approx(weights["booking"] / sum(weights.values()))
    assert s.names == []  # written in lower case: a word, not a name
    # a word no chunk holds ties with any other such word: the longer (the rarer in English) leads
    unheld = signals("Can I pay for a booking with cryptocurrency?", QUOTE, [PRICE_BLOCK], {"booking": 3}, N)
    assert unheld.missing == ["cryptocurrency", "pay"]


def test_words_in_the_quotes_or_their_breadcrumb_are_found():
    s = signals("How is the price of bookings made up?", QUOTE, [PRICE_BLOCK], DF, N)
    assert "price" not in s.missing and "booking" not in s.missing and "bookings" not in s.missing
    # "made" is no word of the quote: the only one missing
    assert s.missing == ["made"]
    heading_only = signals("Where is the price shown?", [{**QUOTE[0], "text": "It is shown on the form."}],
                           [PRICE_BLOCK], DF, N)
    assert "price" not in heading_only.missing  # the block's breadcrumb says "Price"


def test_a_follow_ups_carried_topic_is_not_its_focus_and_unknown_names_are_named():
    s = signals("And straight to my Dropbox? — about: Export", QUOTE, [PRICE_BLOCK], DF, N)
    assert s.names == ["Dropbox"]
    assert "export" not in s.missing and s.missing[0] in ("dropbox", "straight")


def test_a_long_question_needs_less_grounding_for_each_word_past_the_usual_length():
    base = Signals(found=0.2, near=0.25, semantic=0.6, standout=2.0, missing=["wife"])
    score = grounding(base, THRESHOLDS["semantic_weight"], THRESHOLDS["standout_weight"])
    assert score == pytest.approx(0.25 + 0.48 + 0.3 * math.log(2.0))  # 0.938: under 1.02
    assert verdict(replace(base, words=9))[0] == PARTIAL
    assert verdict(replace(base, words=11))[0] == PARTIAL
    long = verdict(replace(base, words=13))  # 1.02 - 2 x 0.05 = 0.92
    assert long[0] == COVERED
    short = verdict(replace(base, words=12))  # 0.97 needed
    assert short[0] == PARTIAL and "0.97 needed" in short[1]
    # `settled_without_near` reads the same bar
    assert not settled_without_near(replace(base, near=None, words=13))
    assert settled_without_near(replace(base, near=None, found=0.3, words=13))


def test_names_count_only_in_the_sentences_that_ask():
    # the reader's setting, told in a statement, names what the docs need not hold
    told = signals("My backups go to Dropbox every night. How is the price of a booking made up?", QUOTE,
                   [PRICE_BLOCK], DF, N)
    assert told.names == []
    asked = signals("My backups run every night. Can they go straight to my Dropbox?", QUOTE, [PRICE_BLOCK], DF, N)
    assert asked.names == ["Dropbox"]
    # a question with no question mark asks with every sentence
    assert signals("Send my export to Dropbox.", QUOTE, [PRICE_BLOCK], DF, N).names == ["Dropbox"]


def test_embedding_closeness_of_the_rarest_missing_word_to_the_quotes():
    vectors = {"cryptocurrency": [1.0, 0.0], "quote": [0.6, 0.8]}
    s = signals("Can I pay with cryptocurrency?", QUOTE, [PRICE_BLOCK], DF, N,
                embed=lambda texts: [vectors.get(t, [0.0, 0.0]) for t in texts], unit_vectors=[vectors["quote"]],
                question_vector=[0.0, 1.0])
    assert s.missing_close == pytest.approx(0.6) and s.semantic == pytest.approx(0.8)


def test_a_lacking_word_counts_by_how_close_in_meaning_the_nearest_quoted_word_is():
    assert near_credit(0.45) == 0.0 and near_credit(0.5) == 0.0
    assert near_credit(0.65) == pytest.approx(0.5) and near_credit(0.8) == 1.0 and near_credit(0.97) == 1.0
    # unit vectors at a chosen cosine to "fee": "charge" 0.95, "payment" 0.65, "wallet" 0.3; every
    # other word of the quote at right angles to all of them
    def at(cosine):
        return [cosine, math.sqrt(1 - cosine * cosine), 0.0]

    other = [0.0, 0.0, 1.0]
    vectors = {"charge": at(0.95), "payment": at(0.65), "wallet": at(0.3), "fee": at(1.0)}
    embed = lambda texts: [vectors.get(t, other) for t in texts]  # noqa: E731
    found = stand_ins(["charge", "payment", "wallet"], {"fee", "price", "the", "3"}, embed)
    assert found == {"charge": ("fee", 1.0), "payment": ("fee", pytest.approx(0.5))}  # no stand-in for "wallet"
    s = signals("Is there a charge for a booking or a wallet?", QUOTE, [PRICE_BLOCK], DF, N, embed=embed)
    weights = {w: idf_of(w, DF, N) for w in ("charge", "booking", "wallet")}
    assert s.found == pytest.approx(weights["booking"] / sum(weights.values()))
    assert s.near == pytest.approx((weights["booking"] + weights["charge"]) / sum(weights.values()))
    assert s.stand_ins == {"charge": "fee"}
    assert near_share("Is there a charge for a booking or a wallet?", {"fee", "booking"}, DF, N, embed) == (
        pytest.approx(s.near))
    # the word the quotes lack with nothing near it is named first, and the verdict reads `near`
    assert s.missing == ["wallet", "charge"]
    assert grounding(s, 0.0, 0.0) == pytest.approx(s.near)
    reason = verdict(s, threshold=5.0)[1]
    assert "\u201cwallet\u201d" in reason and "with words close in meaning" in reason


def test_near_is_measured_only_when_the_verdict_can_turn_on_it():
    # grounding rises with near, which lies between found and 1: outside that band nothing is embedded
    assert settled_without_near(Signals(found=0.9, semantic=0.7, standout=3.0))  # covered on found alone
    assert settled_without_near(Signals(found=0.0, semantic=0.1, standout=0.1))  # partial even with near at 1
    assert settled_without_near(Signals(found=0.0, semantic=0.9, standout=9.0, names=["Bitcoin"]))
    undecided = Signals(found=0.1, semantic=0.6, standout=1.0)
    assert not settled_without_near(undecided)
    assert verdict(replace(undecided, near=0.1))[0] == PARTIAL and verdict(replace(undecided, near=1.0))[0] == COVERED
    embedded = []

    def embed(texts):
        embedded.extend(texts)
        return [[1.0, 0.0] for _ in texts]

    settled = signals("How is the price of bookings made up?", QUOTE, [PRICE_BLOCK], DF, N, embed=embed,
                      settled=lambda s: True)
    assert settled.near is None and embedded == [] and verdict(settled)[1].startswith("the quotes hold")
    measured = signals("How is the price of bookings made up?", QUOTE, [PRICE_BLOCK], DF, N, embed=embed,
                       settled=lambda s: False)
    assert measured.near is not None and "made" in embedded


def test_the_packaged_model_credits_synonyms_and_spellings_not_words_of_the_same_field(embeddings):
    from graph.resources import TextVectors

    embed = TextVectors(embeddings).embed
    close = stand_ins(["photo", "colour", "theme", "depreciate"], {"image", "color", "design", "monetary"}, embed)
    assert close["photo"][0] == "image" and close["colour"] == ("color", 1.0)
    assert "depreciate" not in close and close.get("theme", ("", 0.0))[1] < 0.5


def test_verdict_rules():
    """Figures of the sample docs' session (the issue's questions, signals as the node measured them)."""
    price = Signals(found=1.0, semantic=0.67, standout=5.46)  # "How is the price of a booking made up?"
    crypto = Signals(found=0.06, semantic=0.56, standout=2.57, unknown=0.55, missing=["cryptocurrency"],
                     missing_idf=1.0)  # "Can I pay for a booking with cryptocurrency?"
    assert verdict(price)[0] == COVERED and "100%" in verdict(price)[1]
    assert verdict(crypto)[0] == PARTIAL and "cryptocurrency" in verdict(crypto)[1]
    # a name no chunk of the docs holds is enough, however well the rest reads
    assert verdict(Signals(found=0.9, semantic=0.9, standout=9.0, names=["Bitcoin"])) == (
        PARTIAL, "the docs never name Bitcoin")


def test_a_question_asking_for_a_figure_the_quotes_lack_is_partial_however_well_they_read():
    logs = [{"n": 1, "kind": "sentence", "text": "Logs are written to stdout and you can adjust the log level.",
             "header": None, "label": ""}]
    block = {"heading_path": ["Logs"], "text": logs[0]["text"]}
    asked = signals("And how long are logs kept? \u2014 about: Logs", logs, [block], {"logs": 3}, 100)
    assert (asked.figure, asked.figure_held) == ("duration", False)
    assert settled_without_near(asked)  # the verdict does not turn on words close in meaning
    assert verdict(replace(asked, semantic=0.9, standout=9.0)) == (
        PARTIAL, "the question asks how long, and the quotes hold no duration")
    # a figure in the quotes, or in their block's breadcrumb, answers the kind of question
    kept = [{**logs[0], "text": "Logs are kept for 30 days."}]
    assert signals("How long are logs kept?", kept, [block], {"logs": 3}, 100).figure_held
    dated = signals("How long are logs kept?", logs, [{**block, "heading_path": ["Logs", "Kept 7 days"]}],
                    {"logs": 3}, 100)
    assert dated.figure_held
    # the carried topic is not the ask: "How long" in it asks for nothing
    carried = signals("Where are they written? \u2014 about: How long logs are kept", logs, [block], {"logs": 3}, 100)
    assert carried.figure is None and carried.figure_held


def test_a_name_phrase_no_searched_section_holds_is_named_once():
    frequency = {"google": 3, "maps": 4, "azure": 0}
    searched = ["Google Photos albums can be imported.", "The places view shows photos on world maps."]
    s = signals("Can I plug my own Google Maps key into it?", QUOTE, [PRICE_BLOCK], frequency, 100, searched=searched)
    assert s.names == ["Google Maps"] and verdict(s) == (PARTIAL, "the docs never name Google Maps")
    # a phrase with a name no chunk holds is named by that name alone
    assert signals("Can it read Azure Maps?", QUOTE, [PRICE_BLOCK], frequency, 100, searched=searched).names == \
        ["Azure"]
    # without the searched sections nothing is known of phrases
    assert signals("Can I plug my own Google Maps key into it?", QUOTE, [PRICE_BLOCK], frequency, 100).names == []


def test_a_word_no_chunk_holds_weighs_nothing_in_the_readers_story_and_most_where_they_ask():
    frequency = {"password": 10, "login": 8, "unlock": 2, "typed": 1}
    quote = [{"n": 1, "kind": "sentence", "text": "An admin can unlock a login after too many password attempts.",
              "header": None, "label": ""}]
    block = {"heading_path": ["Users"], "text": quote[0]["text"]}
    told = signals("My wife typed the wrong password. How do I unlock her login?", quote, [block], frequency, 100)
    # "wife" and "wrong" no chunk holds: lacking, but weighing nothing
    assert told.unknown_words == [] and told.missing[-2:] == ["wrong", "wife"]
    weights = {w: idf_of(w, frequency, 100) for w in ("typed", "password", "unlock", "login")}
    held = sum(weights[w] for w in ("password", "unlock", "login"))
    assert told.found == pytest.approx(held / sum(weights.values()))
    assert told.words == 6  # still a question of six words (`needed`)
    asked = signals("How do I unlock the login of my wife?", quote, [block], frequency, 100)
    assert asked.unknown_words == ["wife"] and asked.missing[0] == "wife"


def test_grounding_rises_with_each_signal():
    base = dict(found=0.5, semantic=0.6, standout=2.0)
    weights = {k: THRESHOLDS[k] for k in ("semantic_weight", "standout_weight")}
    score = grounding(Signals(**base), **weights)
    for name, more in (("found", 0.7), ("semantic", 0.8), ("standout", 4.0)):
        assert grounding(Signals(**{**base, name: more}), **weights) > score
    # a turn with no signals measured (no statistics, no vectors) is judged on the words alone
    assert grounding(Signals(found=1.0), **weights) == 1.0
    # the threshold can be moved for measuring (benchmarks/tune_coverage.py)
    assert verdict(Signals(**base), threshold=score - 0.01)[0] == COVERED
    assert verdict(Signals(**base), threshold=score + 0.01)[0] == PARTIAL


def test_whether_clause_turns_simple_yes_no_questions_round():
    assert whether_clause("Can I pay for a booking with cryptocurrency?") == \
        "whether you can pay for a booking with cryptocurrency"
    assert whether_clause("Is there a loyalty card programme for regular customers?") == \
        "whether there is a loyalty card programme for regular customers"
    assert whether_clause("Do I need my password for that?") == "whether you need your password for that"
    assert whether_clause("And can we export it — about: Export") == "whether you can export it"
    for other in ("Where is the export button?", "Does it work offline?", "Can I pay? And how?"):
        assert whether_clause(other) is None


def test_partial_preface_says_what_the_docs_lack_then_that_quotes_are_only_the_closest():
    closest = "Here is what they have that is closest:"
    assert partial_preface("Can I pay with cryptocurrency?", {"missing": ["cryptocurrency"]}) == \
        f"The docs do not answer whether you can pay with cryptocurrency. {closest}"
    assert partial_preface("Where do I set the Bitcoin wallet?", {"names": ["Bitcoin"]}) == \
        f"The docs do not have Bitcoin in any section, so they may not answer this question. {closest}"
    assert partial_preface("Where do I switch to dark mode?", {"missing": ["dark", "mode"],
                                                               "unknown_words": ["dark"]}) == \
        f"The docs do not have \u201cdark\u201d in any section, so they may not answer this question. {closest}"
    # a word the quotes lack but other sections hold is not named
    assert partial_preface("Where do I switch to dark mode?", {"missing": ["dark"]}) == \
        f"The docs may not answer this question. {closest}"
    # several words no chunk holds ("accept", "bitcoin", "rentals"): no one of them is named
    assert partial_preface("Do you accept bitcoin for rentals?", {"missing": ["accept", "bitcoin", "rentals"],
                                                                  "unknown_words": ["accept", "bitcoin", "rentals"]}) \
        == f"The docs may not answer this question. {closest}"
    assert partial_preface("Where?", None) == f"The docs may not answer this question. {closest}"
    # a figure the quotes lack is said in the question's own words
    assert partial_preface("And how long are old logs kept?", {"figure": "duration", "figure_held": False}) == \
        f"The docs may not answer how long. {closest}"
    assert partial_preface("How many can I add?", {"figure": "count", "figure_held": True, "missing": ["add"]}) == \
        f"The docs may not answer this question. {closest}"


def test_an_abstained_turn_is_not_covered_with_caps_reason():
    update = coverage({"question": "q", "abstain": True, "abstain_reason": "nothing stands out",
                       "timings_ms": {}}, None)
    assert update["coverage"] == NOT_COVERED and update["coverage_reason"] == "nothing stands out"
    assert set(update) == {"coverage", "coverage_reason", "coverage_signals", "timings_ms"}
    assert not math.isnan(update["timings_ms"]["coverage"])


def test_the_judge_reads_the_chat_models_first_word_and_an_endpoint_failure_changes_nothing():
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from nodes.coverage import judge_with_model

    def reply(text):
        return GenericFakeChatModel(messages=iter([AIMessage(text)]))

    assert judge_with_model(reply("No."), "Can I pay with Bitcoin?", [PRICE_BLOCK], None) == "no"
    assert judge_with_model(reply("Yes, it does"), "How is the price made up?", [PRICE_BLOCK], None) == "yes"
    assert judge_with_model(reply("It depends"), "q", [PRICE_BLOCK], None) == "unclear"

    class Down(GenericFakeChatModel):
        def _generate(self, *args, **kwargs):
            raise ConnectionError("endpoint down")

    assert judge_with_model(Down(messages=iter([])), "q", [PRICE_BLOCK], None) == "unclear"


def test_the_judges_reading_is_one_more_input_never_the_only_one():
    from nodes.coverage import with_judgement

    said = lambda judge, **s: Signals(judge=judge, **s)
    assert with_judgement(COVERED, "r", said("no"))[0] == PARTIAL
    assert with_judgement(PARTIAL, "r", said("yes"))[0] == COVERED
    # a name no chunk holds stays partial whatever the model reads into the context
    assert with_judgement(PARTIAL, "r", said("yes", names=["Bitcoin"])) == (PARTIAL, "r")
    assert with_judgement(COVERED, "r", said("unclear")) == (COVERED, "r")
    assert with_judgement(PARTIAL, "r", said(None)) == (PARTIAL, "r")


def test_a_turn_kept_for_its_closest_candidates_is_partial_when_its_quotes_do_not_stand_for_it():
    from fakes import config_for, make_resources

    state = {"question": "And how is it made up?", "standalone_question": "How is the price made up?",
             "condensed_by": "rules", "context": [PRICE_BLOCK], "evidence": [], "rerank_results": [],
             "timings_ms": {}, "closest_only": "the best score 0.61 stands 0.02 above the median"}
    update = coverage(state, config_for(make_resources([])))
    assert update["coverage"] == PARTIAL
    assert update["coverage_reason"] == ("nothing stands out for this follow-up "
                                         "(the best score 0.61 stands 0.02 above the median)")
    alone = coverage(dict(state, question="How is the price made up?", condensed_by="none"),
                     config_for(make_resources([])))
    assert alone["coverage"] == PARTIAL and alone["coverage_reason"].startswith("nothing stands out for this question (")
    update = coverage(dict(state, closest_only=""), config_for(make_resources([])))
    assert update["coverage_reason"].startswith("the quotes hold")


def test_a_turn_kept_for_its_closest_candidates_is_covered_only_when_its_quotes_stand_for_it():
    from nodes.coverage import turn_verdict

    answers = Signals(found=1.0, semantic=0.7, standout=0.7)  # grounding 1.45: what a covered turn needs
    lacks = Signals(found=0.2, semantic=0.5, standout=0.7, missing=["cryptocurrency"])  # grounding 0.49
    why = "the best score 0.61 stands 0.05 above the median"
    assert turn_verdict(answers, why) == (COVERED, "the quotes hold 100% of the question's weight (grounding "
                                          "1.45), though nothing stood out (" + why + ")")
    assert turn_verdict(lacks, why, "follow-up") == (PARTIAL, f"nothing stands out for this follow-up ({why})")
    assert turn_verdict(lacks) == verdict(lacks) and turn_verdict(answers) == verdict(answers)
    # a name no chunk holds keeps it partial however well the rest reads
    assert turn_verdict(replace(answers, names=["Bitcoin"]), why)[0] == PARTIAL


def test_no_word_is_near_another_where_the_model_reads_letters(monkeypatch):
    from fakes import config_for, make_resources

    from ingest.tokens import reads_as_words
    from nodes import coverage as node

    monkeypatch.setitem(node.MEASURING, "near_always", True)  # measured whenever the question reads as words
    resources = make_resources([])
    assert reads_as_words("How is the price made up?", resources.token_counter)
    assert not reads_as_words("Как испечь хлеб на закваске дома?", resources.token_counter)
    block = {"heading_path": ["Хлеб"], "text": "Цена бронирования складывается из дневной ставки."}
    unit = {"n": 1, "kind": "sentence", "text": block["text"], "header": None, "label": "Хлеб"}
    state = {"question": "Как испечь хлеб на закваске дома?", "condensed_by": "none", "context": [block],
             "evidence": [unit], "rerank_results": [], "timings_ms": {}, "closest_only": ""}
    assert coverage(state, config_for(resources))["coverage_signals"]["near"] is None
    english = dict(state, question="How is the price of a booking made up?", context=[PRICE_BLOCK], evidence=QUOTE)
    assert coverage(english, config_for(resources))["coverage_signals"]["near"] is not None
