import pytest

from nodes.route import classify, route


@pytest.mark.parametrize("question", [
    "Where do I change my password?",
    "Which tab shows the invoice history?",
    "How do I export my data to a spreadsheet?",
    "What do I click to archive a project?",
    "Is there a way to print a report?",
    "How can I rename a workspace?",
])
def test_screen_questions(question):
    intent, confidence, _ = classify(question)
    assert intent == "screen"
    assert confidence > 0.7


@pytest.mark.parametrize("question", [
    "Why is my balance negative after a refund?",
    "What happens to shared files when a member leaves the team?",
    "What is the difference between an archive and a delete?",
    "Should I use one project per client or one per contract?",
    "How does the monthly rollover work?",
    "Can the app sync with my calendar automatically?",
])
def test_conceptual_questions(question):
    intent, confidence, _ = classify(question)
    assert intent == "conceptual"
    assert confidence > 0.7


def test_a_question_without_cues_is_ambiguous_with_low_confidence():
    intent, confidence, reason = classify("Invoices and taxes")
    assert intent == "ambiguous"
    assert confidence == 0.5
    assert reason == "no cue"


def test_the_opening_clause_decides_a_mixed_question():
    intent, _, reason = classify("Where is the export button, and what happens to archived items when I export?")
    assert intent == "screen"
    assert "asks where" in reason and "conceptual" in reason


def test_route_node_classifies_the_standalone_question_and_adds_its_timing():
    update = route({"question": "And where is it?", "standalone_question": "And where is it? — about: Export button",
                    "timings_ms": {"condense": 0.1}})
    assert update["intent"] == "screen"
    assert set(update["timings_ms"]) == {"condense", "route"}
    assert update["messages"][0].content == "And where is it?"  # the conversation keeps what was asked
