"""Answer metrics on hand-made answer lines: every figure worked out by hand."""
from fieldguide.evaluation.answer_metrics import content_words, score_answers, turns_of

CONTEXT = [{"chunk_id": "a", "heading_path": ["Booking form"], "source": "form.md",
            "text": "The Skipper field lists licensed staff who are free on the booking's dates."}]
QUESTIONS = [
    {"id": "q1", "question": "Who can skipper a booking?", "key_facts": ["lists licensed staff", "free on the"]},
    {"id": "q2", "question": "What does the deposit cost?", "key_facts": ["twenty percent"]},
    {"id": "q3", "question": "Can I book a submarine?", "answerable": False, "key_facts": []},
    {"id": "c1", "turns": [{"question": "Where is the skipper field?", "key_facts": ["Skipper field"]},
                           {"question": "And who does it list?", "key_facts": ["licensed staff"]}]},
]


def line(qid, answer, abstain=False, citations=None, first=None):
    return {"id": qid, "answer": answer, "abstain": abstain, "context": [] if abstain else CONTEXT,
            "citations": citations if citations is not None else [{"n": 1}],
            "timings_ms": {"first_token": first} if first is not None else {}}


def test_every_answer_metric_on_a_small_set():
    lines = [
        line("q1", "> The **Skipper** field lists licensed staff who are free on the booking's dates. [1]", first=100),
        line("q2", "The deposit is refunded by the marina office staff [2].", first=300),  # invents, bad marker
        line("q3", "The documentation does not cover this.", abstain=True, first=50),
        line("c1#1", "> The Skipper field lists licensed staff [1]"),
        line("c1#2", "It lists licensed staff [1]."),
    ]
    scores = score_answers(turns_of(QUESTIONS), lines)
    assert scores["turns"] == 5
    assert scores["answer_facts_all"] == 0.75  # q1, c1#1, c1#2 of the four answerable turns
    assert scores["context_facts_all"] == 0.75  # q2's fact is in no context
    assert scores["carry"] == 1.0
    assert scores["invented"] == 0.25  # q2: "refunded", "marina", "office" are in neither context nor question
    assert scores["cited"] == 0.75 and scores["bad_citations"] == 0.25
    assert scores["abstain_ok"] == 1.0 and scores["false_abstain"] == 0.0
    assert scores["first_token_ms"] == 100.0
    assert scores["answer_words"] == 5.0  # median of 8, 5, 5 and 3 content words
    assert scores["grounded_words"] == round(1 - 3 / 21, 3)


def test_an_abstention_misses_its_facts_and_missing_lines_count_as_misses():
    scores = score_answers(turns_of(QUESTIONS[:1]), [line("q1", "lists licensed staff free on the", abstain=True)])
    assert scores["answer_facts_all"] == 0.0 and scores["false_abstain"] == 1.0
    assert score_answers(turns_of(QUESTIONS[:2]), [])["answer_facts_all"] == 0.0


def test_content_words_skip_function_words_markers_and_markdown():
    assert content_words("The **Skipper** field [1] lists who is free.") == ["skipper", "field", "lists", "free"]


def test_agrees_with_the_reference_answer_scorer_when_it_is_beside_this_checkout(tmp_path):
    import importlib.util
    import json
    from pathlib import Path

    import pytest

    reference_path = Path(__file__).resolve().parents[2].parent / "shared" / "eval" / "answer_score.py"
    if not reference_path.is_file():
        pytest.skip("the reference scorer shared/eval/answer_score.py is not beside this checkout")
    spec = importlib.util.spec_from_file_location("reference_answer_score", reference_path)
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    lines = [line("q1", "> The Skipper field lists licensed staff who are free on the dates. [1]", first=100),
             line("q2", "The deposit is refunded by the marina office staff [2].", first=300),
             line("q3", "No.", abstain=True), line("c1#2", "It lists licensed staff [1].")]
    questions_file, answers_file = tmp_path / "q.jsonl", tmp_path / "a.jsonl"
    questions_file.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    answers_file.write_text("".join(json.dumps(a) + "\n" for a in lines))
    items = reference.expand(reference.load_jsonl(str(questions_file)))
    expected = reference.score(items, {a["id"]: a for a in reference.load_jsonl(str(answers_file))})
    expected.pop("answered_lines")
    assert score_answers(turns_of(QUESTIONS), lines) == expected
