"""condense: follow-ups made standalone before retrieval; the first question of a conversation
and questions that stand on their own are left as asked."""
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from fakes import config_for, make_resources
from nodes.condense import answered_from, condense, condense_by_rules, leans_on_previous, page_name, trusted_rewrite

PREVIOUS_CONTEXT = [{"chunk_id": "x", "source": "budgeting/categories.md", "rerank_score": 0.8,
                     "heading_path": ["Categories", "Renaming or Deleting a Category"], "text": "..."},
                    {"chunk_id": "y", "source": "other.md", "rerank_score": 0.5, "heading_path": ["Other"],
                     "text": "..."}]


@pytest.mark.parametrize("question", [
    "And where do I turn it off?",
    "What about the three-dot menu above those columns?",
    "Is the copy on my laptop protected too?",
    "Where do I turn that off for just one payee?",
    "What if I need to edit one of them anyway?",
    "And the price?",
    "Or could I skip the bin completely?",
    "Only for people coming in through the proxy, though, not for everyone?",
    "Could that be why some visitors aren't showing up?",
    "Can I also use that to compare today with yesterday?",
    "Could that folder live on another disk?",
    "Can I export that path view as an image?",
    "Is the most verbose one OK to leave on in production?",
    "Does the other one keep my settings?",
    "Do the second kind slow down the page?",
    "How is the manual option different?",
    "Can I give each one a nicer address than the default?",
    "Can I also put a PIN on her profile?",
    "Would getting the codes by email instead be a better idea?",
    "Different thing on the same topic: which of the user statuses can actually log in?",
    "A different question about it: can I rename it?",
])
def test_questions_that_lean_on_the_previous_turn(question):
    assert leans_on_previous(question)


@pytest.mark.parametrize("question", [
    "How do I export my budget as a CSV file?",
    "Which field holds the number of life jackets?",
    "Is there a dark mode in the settings page?",
    "Where can I set a greeting that everyone sees on the sign-in page?",
    "Is there a setting that hides archived accounts?",
    "When I compare this week with last year, do the weekdays line up?",
    "Where do I enter the one-time password from my authenticator app?",
    "Can I give everyone in the team one shared login?",
    "How are roles and policies different?",
    "Are there servers I could use instead of writing one for push notifications?",
    "Different thing: another show has a 'behind the scenes' folder. Will Jellyfin treat what's in it as extras?",
    "Separate question: can I also run it on a Raspberry Pi?",
    "Unrelated, but does it work with that?",
])
def test_questions_that_stand_on_their_own(question):
    assert not leans_on_previous(question)


def test_rules_carry_the_previous_answers_section_or_else_the_previous_questions_terms():
    previous = "How do I delete a category I don't use anymore?"
    follow_up = "What happens to the money that's still in it?"
    assert condense_by_rules(follow_up, previous, ["Categories", "Renaming or Deleting a Category"]) == (
        "What happens to the money that's still in it? — about: Categories > Renaming or Deleting a Category", "rules")
    assert condense_by_rules(follow_up, previous) == (
        "What happens to the money that's still in it? — about: delete category use", "rules")
    assert condense_by_rules("How do I export my budget as a CSV file?", previous) == (
        "How do I export my budget as a CSV file?", "none")
    assert condense_by_rules(follow_up, None) == (follow_up, "none")


def test_a_preface_that_starts_afresh_is_not_part_of_the_standalone_question():
    previous = "How do I send campaigns through my own SMTP server?"
    assert condense_by_rules("Separate question: are there servers I could use instead of writing one?", previous) \
        == ("are there servers I could use instead of writing one?", "none")
    assert condense_by_rules("Unrelated, but can it import a CSV?", previous) == ("can it import a CSV?", "none")
    assert condense_by_rules("Different thing:", previous) == ("Different thing:", "none")  # nothing else asked
    # a question that only opens like one keeps its words
    assert condense_by_rules("Different things can be exported?", None) == ("Different things can be exported?", "none")


def test_a_rewrite_is_trusted_only_as_one_question_about_the_same_thing():
    assert trusted_rewrite("Where do I turn off automatic rules for a payee?", "Where do I turn that off?") \
        == "Where do I turn off automatic rules for a payee?"
    assert trusted_rewrite("You can turn it off in Settings.", "Where do I turn that off?") is None  # an answer
    assert trusted_rewrite("What is the weather?", "Where do I turn that off?") is None  # lost the question
    assert trusted_rewrite("First line?\nSecond line?", "Where do I turn that off?") is None


def follow_up_state(question="And where do I turn it off?"):
    return {"question": question, "standalone_question": "How do I turn on automatic rules?",
            "messages": [HumanMessage("How do I turn on automatic rules?"), AIMessage("> quoted [1]")],
            "context": PREVIOUS_CONTEXT, "timings_ms": {"generate": 9.0}, "stages": {"cap": ["old"]}}


def test_the_node_opens_the_turn_and_condenses_by_rules_with_the_local_model():
    resources = make_resources([], chat_model=None)
    update = condense(follow_up_state(), config_for(resources))
    # the previous answer's section by its own heading: the page's headings above it would pull
    # retrieval back to that page, and follow-ups tend to move on to a neighbouring one
    assert update["standalone_question"] == "And where do I turn it off? — about: Renaming or Deleting a Category"
    assert update["condensed_by"] == "rules"
    assert update["timings_ms"].keys() == {"condense"} and update["stages"] == {}
    assert update["answer"] == "" and update["citations"] == [] and update["abstain"] is False
    # the page the previous answer was drawn from: the rerank's prior for the follow-up
    assert update["follow_up_page"] == "budgeting/categories.md"


def test_after_a_turn_kept_for_its_closest_candidates_the_previous_questions_words_are_carried():
    state = dict(follow_up_state(), closest_only="the best score 0.61 stands 0.02 above the median")
    update = condense(state, config_for(make_resources([], chat_model=None)))
    assert update["standalone_question"] == "And where do I turn it off? — about: automatic rules"
    assert update["follow_up_page"] == ""  # nothing stood out: no page to lean on


def test_only_a_follow_up_carrying_the_previous_answers_topic_names_its_page():
    resources = make_resources([], chat_model=None)
    standing = condense(follow_up_state("How do I export my whole budget to a spreadsheet file?"), config_for(resources))
    assert standing["condensed_by"] == "none" and standing["follow_up_page"] == ""
    first = condense({"question": "And what is it?"}, config_for(resources))
    assert first["follow_up_page"] == ""


def test_the_first_question_is_its_own_standalone_question():
    update = condense({"question": "  And   what is it? "}, config_for(make_resources([])))
    assert update["standalone_question"] == "And what is it?" and update["condensed_by"] == "none"


def test_the_model_rewrites_when_asked_and_the_rules_step_in_when_its_reply_is_not_a_question():
    good = GenericFakeChatModel(messages=iter([AIMessage("Where do I turn off automatic rules?")]))
    update = condense(follow_up_state(), config_for(make_resources([], chat_model=good), condense="model"))
    assert (update["standalone_question"], update["condensed_by"]) == ("Where do I turn off automatic rules?", "model")
    chatty = GenericFakeChatModel(messages=iter([AIMessage("Sure! Open Settings and untick it.")]))
    update = condense(follow_up_state(), config_for(make_resources([], chat_model=chatty), condense="model"))
    assert update["condensed_by"] == "rules"


def test_condense_off_leaves_the_question_alone():
    update = condense(follow_up_state(), config_for(make_resources([]), condense="off"))
    assert update["standalone_question"] == "And where do I turn it off?" and update["condensed_by"] == "none"


def test_an_unknown_condense_mode_is_a_clear_error():
    from graph.options import InvalidOption

    with pytest.raises(InvalidOption, match="option condense: .*'auto', 'model', 'rules' or 'off'"):
        condense(follow_up_state(), config_for(make_resources([]), condense="sometimes"))


def test_a_page_is_named_by_its_file():
    assert page_name("02.content/4.import-export.md") == "import export"
    assert page_name("console/remediation_sync.mdx") == "remediation sync"
    assert page_name("budgeting/index.md") == "budgeting"  # an index page: its folder's name
    assert page_name("faq.md") == "faq"
    assert page_name("") == ""


OPTION_CONTEXT = [{"chunk_id": "o", "source": "miscellaneous/logging.md", "rerank_score": 0.9,
                   "heading_path": ["Options", "level"], "text": "..."},
                  {"chunk_id": "p", "source": "miscellaneous/ntp.md", "rerank_score": 0.4,
                   "heading_path": ["Options", "address"], "text": "..."}]


def test_the_page_name_is_carried_beside_a_heading_when_few_chunks_mention_it():
    """An option called "level" names its topic only on its page; the page's file name says what
    it is about, and is carried when its rarest word is rare in the index, not when it names what
    the whole product is about (it would make every section of that topic look alike)."""
    assert answered_from(OPTION_CONTEXT) == ["level"]  # no term statistics: the heading alone
    assert answered_from(OPTION_CONTEXT, {"logging": 3}, 1000) == ["level", "logging"]
    assert answered_from(OPTION_CONTEXT, {"logging": 300}, 1000) == ["level"]
    assert answered_from(OPTION_CONTEXT, {}, 1000) == ["level", "logging"]  # in no chunk's words at all
    # a heading that already says it carries no page name twice
    said = [{**OPTION_CONTEXT[0], "heading_path": ["Logging"]}]
    assert answered_from(said, {"logging": 3}, 1000) == ["Logging"]
    assert answered_from([], {"logging": 3}, 1000) == []


def test_the_node_carries_the_page_name_from_the_index_term_statistics():
    from fieldguide.bm25 import TermStats

    resources = make_resources([], chat_model=None)
    resources._term_stats = TermStats(1000, 50.0, {"logging": 4, "level": 40})
    state = {**follow_up_state("Is the most verbose one OK to leave on in production?"),
             "standalone_question": "Which log levels can I set?", "context": OPTION_CONTEXT}
    update = condense(state, config_for(resources))
    assert update["standalone_question"] == (
        "Is the most verbose one OK to leave on in production? — about: level > logging")
