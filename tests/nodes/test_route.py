import pytest

from nodes.route import classify, route, wording_margin


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


def test_why_counts_only_where_it_asks():
    assert "asks why" in classify("Why is the total wrong?")[2]
    assert "asks why" in classify("The total is wrong. Why?")[2]
    assert "asks why" not in classify("How do I add a note so the team knows why the numbers jumped?")[2]


def test_any_task_after_how_do_i_is_procedural_but_knowing_is_not():
    assert "procedural how-to" in classify("How do I stop my visits being counted?")[2]
    assert "procedural how-to" not in classify("How do I know whether the import worked?")[2]


def test_the_wording_margin_is_kept_for_weigh_intent():
    update = route({"question": "Where is the export button?"})
    assert update["intent_wording"] > 0
    assert route({"question": "Где находится кнопка экспорта?"})["intent_wording"] == 0.0  # no English cue


OPERATIONS = "conceptual: names an operations topic"
FAULT = "conceptual: asks what went wrong"


@pytest.mark.parametrize("question, cue", [
    ("How do I install the server on a NAS with Docker?", OPERATIONS),
    ("How should I back up the database before upgrading?", OPERATIONS),
    ("Can the server keep its data in Postgres?", OPERATIONS),
    # a reader reporting a fault asks how it works
    ("I embedded the page in an iframe but the browser refuses to connect. What am I doing wrong?", FAULT),
    ("I linked the account yesterday and today there is nothing. Is the integration broken?", FAULT),
    ("After signing in with a passkey it still asks for my password. Isn't the passkey supposed to replace it?",
     FAULT),
])
def test_operations_and_fault_reports_lean_conceptual(question, cue):
    assert has_cue(question, cue)
    assert classify(question)[0] != "screen"


@pytest.mark.parametrize("question", [
    "Which environment variable sets the log level?",
    "Which config.yaml key limits the number of requests?",
    "What flag do I pass to skip the confirmation?",
    "Is there a single command that lists every registered server?",
    "Which API endpoint do I call to upload a file?",
])
def test_asking_for_a_named_setting_outweighs_the_operations_topic(question):
    assert has_cue(question, "screen: asks which named setting")
    assert classify(question)[0] == "screen"


def test_which_value_wins_is_no_named_setting():
    # precedence between two places a value is set asks how the product decides
    assert not has_cue("If an option is in the YAML file and in the environment, which value wins?",
                       "asks which named setting")


def has_cue(question: str, ending: str) -> bool:
    """Whether the wording of `question` fired the cue whose reason ends so."""
    return any(reason.endswith(ending) for reason in wording_margin(question)[1])


@pytest.mark.parametrize("question", [
    "Which setting controls how long a session lasts?",
    "Which cookie setting handles the idle timeout?",
    "Which notification setting sends one message per batch?",
])
def test_asking_which_control_of_a_part_is_asking_which_ui_element(question):
    assert has_cue(question, "screen: asks which UI element")


def test_which_without_a_control_after_it_is_no_such_cue():
    assert not has_cue("Which of my payees were renamed by the import rules last month?", "asks which UI element")
