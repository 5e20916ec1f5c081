"""`fieldguide gaps`: which stored turns are problems, how they cluster, how clusters are classified,
and the report formats. The index-backed classification on the dev corpus is measured by
scripts/bench_gaps.py (docs/BENCHMARKS.md, "Gaps"); here the rules themselves are pinned."""
from __future__ import annotations

import csv
import io
import json

import pytest

from fieldguide.gaps import (FEW_CHUNKS, NEAREST_MAX, PASSING_MENTION_CHUNKS, RENDERERS, BroadSearch, Cluster,
                             GapReport, ProblemTurn, PAGE_SUPPORT, TopicWords, TurnSummary, build_report, classify,
                             cluster_questions, named_per_wording, named_sections, page_supported, parse_since,
                             passing_mention, probe_threshold, problem_turns, sentence_reasons, topic_words)


def _turn(cid, n, question, **values):
    return {"conversation_id": cid, "turn": n, "question": question, "status": "done", "started_at": 1000.0 + n,
            **values}


def test_since_accepts_dates_and_refuses_anything_else():
    assert parse_since(None) == 0.0
    assert parse_since("2026-01-31") == parse_since("2026-01-31T00:00:00+00:00")
    assert parse_since("2026-01-31T01:00+01:00") == parse_since("2026-01-31")
    for bad in ("yesterday", "31/01/2026", "2026-13-01"):
        with pytest.raises(ValueError, match="--since"):
            parse_since(bad)


def test_problem_turns_and_their_reasons():
    turns = [
        _turn("a", 1, "fine", abstain=False, sentences=[{"text": "x", "support": 0.9, "kept": True}]),
        _turn("a", 2, "abstained", abstain=True),
        _turn("b", 1, "dropped", abstain=False, sentences=[{"text": "x", "support": 0.1, "kept": False}]),
        _turn("b", 3, "partial", abstain=False, coverage="partial", sentences=[{"text": "x", "support": 1.0,
                                                                                 "kept": True}]),
        _turn("b", 2, "flagged", abstain=False, sentences=[{"text": "x", "support": 0.4, "kept": True,
                                                             "flagged": True}]),
        _turn("c", 1, "unchecked but voted down", abstain=False, standalone_question="standalone wording",
              citations=[{"source": "a.md", "heading_path": ["A"]}]),
        _turn("c", 2, "unchecked", abstain=False),
        _turn("d", 1, "still running", status="running"),
        _turn("e", 1, "too old", abstain=True, started_at=10.0),
    ]
    feedback = [{"conversation_id": "c", "turn": 1, "rating": "up", "comment": "", "at": 5.0},
                {"conversation_id": "c", "turn": 1, "rating": "down", "comment": "wrong screen", "at": 6.0},
                {"conversation_id": "a", "turn": 1, "rating": "up", "comment": "", "at": 7.0}]
    summary = problem_turns(turns, feedback, since=500.0)
    assert summary.turns == 7 and summary.checked == 4 and summary.unchecked == 2
    got = {p.asked: p for p in summary.problems}
    # a sentence the check left out never reached the reader: no problem of the docs
    assert set(got) == {"abstained", "partial", "flagged", "unchecked but voted down"}
    assert got["abstained"].reasons == ["abstained"] and got["partial"].reasons == ["partial"]
    assert got["flagged"].reasons == ["weak"]
    voted = got["unchecked but voted down"]
    assert voted.reasons == ["disliked"] and voted.comments == ["wrong screen"]
    assert voted.question == "standalone wording"  # the standalone question is what gets clustered


def test_newest_vote_wins_and_rated_copies_outlive_their_turns():
    record = _turn("gone", 1, "expired but rated", abstain=False)
    feedback = [{"conversation_id": "gone", "turn": 1, "rating": "down", "comment": "", "at": 1.0, "record": record},
                {"conversation_id": "gone", "turn": 1, "rating": "up", "comment": "", "at": 2.0, "record": record}]
    assert problem_turns([], feedback).problems == []
    feedback[0]["at"] = 3.0  # the down vote is now the newest
    assert [p.reasons for p in problem_turns([], feedback).problems] == [["disliked"]]
    assert sentence_reasons(None) == [] and sentence_reasons([{"kept": False}, {"flagged": True}]) == ["weak"]


def test_clustering_joins_near_vectors_only():
    vectors = [[1, 0, 0], [0.95, 0.1, 0], [0, 1, 0], [0, 0.97, 0.2], [0, 0, 1]]
    assert sorted(cluster_questions(vectors, 0.9)) == [[0, 1], [2, 3], [4]]
    assert sorted(cluster_questions(vectors, 0.999)) == [[0], [1], [2], [3], [4]]
    # two halves of one need opened apart by the greedy pass are merged afterwards
    assert sorted(cluster_questions([[1, 0], [0, 1], [0.7, 0.7], [0.72, 0.69]], 0.9)) == [[0], [1], [2, 3]]
    assert cluster_questions([], 0.5) == []


def test_clustering_is_by_average_linkage_so_clusters_do_not_chain():
    """A wording close to a cluster's normalised centroid but, on average, not close enough to its
    members stays apart: the centroid of two loosely related wordings leans towards what they
    share and would draw in a third need."""
    first, second = [1.0, 0.0, 0.0], [0.5, 0.75 ** 0.5, 0.0]  # cosine 0.5: one need at 0.48
    third = [0.4 + 0.2 * 0.5, 0.2 * 0.75 ** 0.5, 0.72 ** 0.5]  # cosine 0.5 and 0.4 to them: mean 0.45
    assert sorted(cluster_questions([first, second, third], 0.48)) == [[0, 1], [2]]
    assert sorted(cluster_questions([first, second, third], 0.44)) == [[0, 1, 2]]


def test_clustering_ten_thousand_vectors_is_fast_and_exact():
    """10,000 wordings (half on 40 topics, half each on a subject of its own, shuffled) cluster into
    exactly those groups in seconds: the comparisons are matrix products a block at a time, the
    same partition a row-by-row pass gives."""
    import time

    import numpy as np

    rng = np.random.default_rng(16)
    topics = rng.normal(size=(40, 384))
    labels = np.concatenate([rng.integers(0, 40, 5000), np.arange(40, 5040)])
    vectors = np.vstack([topics[labels[:5000]] + rng.normal(scale=0.8, size=(5000, 384)),
                         rng.normal(size=(5000, 384))])
    order = rng.permutation(len(vectors))
    vectors, labels = vectors[order], labels[order]
    started = time.perf_counter()
    clusters = cluster_questions(vectors, 0.5)
    seconds = time.perf_counter() - started
    expected = {}
    for row, label in enumerate(labels):
        expected.setdefault(int(label), []).append(row)
    assert sorted(clusters) == sorted(expected.values())
    assert seconds < 20, seconds  # about 0.5 s; the row-by-row pass before took 30 s on 10,000 distinct wordings
    head = vectors[:1500]
    assert sorted(cluster_questions(head, 0.5)) == sorted(cluster_questions(head, 0.5, block=1))


def _problem(question, reasons, answered=False, citations=()):
    return ProblemTurn("c", 1, question, question, list(reasons), answered, list(citations))


def test_classification_follows_the_levels():
    sections = [{"source": "a.md", "heading_path": ["A", "B"], "score": 0.8},
                {"source": "c.md", "heading_path": ["C"], "score": 0.5}]
    kind, reason, action, nearest = classify([_problem("q", ["abstained"])], sections, strong=0.7, noise=0.6)
    assert kind == "not_found" and "a.md#A > B" in reason and "a.md#A > B" in action and nearest == sections
    kind, reason, _, _ = classify([_problem("q", ["abstained"])], sections, strong=0.9, noise=0.85)
    assert kind == "missing" and "0.800" in reason
    assert classify([_problem("q", ["abstained"])], [], strong=0.9, noise=0.85)[0] == "missing"
    disliked = [_problem("q", ["disliked"], True, [{"source": "x.md", "heading_path": ["X"]}]),
                _problem("q2", ["disliked"], True, [{"source": "x.md", "heading_path": ["X"]}]),
                _problem("q3", ["abstained"])]
    kind, reason, action, nearest = classify(disliked, sections, strong=0.7, noise=0.6)
    assert kind == "disliked" and "2 of 3" in reason and nearest[0]["source"] == "x.md" and "x.md#X" in action


WORDS = {"payroll": [1.0, 0.0, 0.0], "staff": [0.8, 0.6, 0.0], "how": [0.0, 1.0, 0.0], "run": [0.0, 0.0, 1.0],
         "2024": [1.0, 0.0, 0.0]}


def test_topic_words_are_the_words_nearest_the_centroid_and_the_docs_may_not_use_them():
    asked = []

    def word_vectors(words):
        asked.extend(words)
        return [WORDS[w] for w in words]

    topic = topic_words(["How run payroll?", "Payroll staff 2024"], [1.0, 0.1, 0.0], word_vectors,
                        {"how": 500, "run": 40, "staff": PASSING_MENTION_CHUNKS + 1})
    assert "2024" not in asked  # numbers name amounts, not topics
    assert [w for w, _, _ in topic.words] == ["payroll", "staff", "how"]
    assert topic.unknown == ["payroll"]  # in no chunk; "staff" is in more than a passing mention
    closeness = {w: c for w, c, _ in topic.words}
    assert topic.unknown_share == pytest.approx(closeness["payroll"] / sum(max(c, 0) for c in closeness.values()),
                                                abs=1e-3)
    assert topic_words(["2024"], [1.0, 0.0, 0.0], word_vectors, {}) is None
    known = topic_words(["How run payroll"], [1.0, 0.1, 0.0], word_vectors, {"payroll": 12, "how": 500, "run": 40})
    assert known.unknown == [] and known.unknown_share == 0.0


def test_a_word_in_a_few_chunks_and_no_heading_is_a_passing_mention():
    assert passing_mention(PASSING_MENTION_CHUNKS, None) and passing_mention(PASSING_MENTION_CHUNKS, 3)
    assert passing_mention(FEW_CHUNKS, 0)  # a few mentions, no section named after it
    assert not passing_mention(FEW_CHUNKS, 1)  # a heading names it: the docs have a section about it
    assert not passing_mention(FEW_CHUNKS + 1, 0)
    assert not passing_mention(FEW_CHUNKS, None)  # headings not known: the chunk count alone decides
    words = {"feedback": [1.0, 0.0, 0.0], "how": [0.0, 1.0, 0.0], "give": [0.0, 0.0, 1.0]}
    frequency = {"feedback": FEW_CHUNKS, "how": 500, "give": 30}

    def word_vectors(texts):
        return [words[w] for w in texts]

    plain = topic_words(["How give feedback"], [1.0, 0.2, 0.1], word_vectors, frequency)
    assert plain.unknown == [] and plain.unknown_share == 0.0
    headed = topic_words(["How give feedback"], [1.0, 0.2, 0.1], word_vectors, frequency,
                         heading_frequency={"how": 3})
    assert headed.unknown == ["feedback"] and headed.unknown_share > 0.5
    named = topic_words(["How give feedback"], [1.0, 0.2, 0.1], word_vectors, frequency,
                        heading_frequency={"feedback": 2})
    assert named.unknown == []


def test_a_cluster_on_words_the_docs_do_not_use_is_missing_whatever_it_scores():
    sections = [{"source": "pay.md", "heading_path": ["Payees"], "score": 0.8}]
    turns = [_problem("How do I run payroll?", ["abstained"])]
    absent = TopicWords([("payroll", 0.7, 0), ("run", 0.2, 40), ("how", 0.1, 500)], 0.7)
    kind, reason, _, nearest = classify(turns, sections, strong=0.7, noise=0.6, topic=absent)
    assert kind == "missing" and '"payroll"' in reason and nearest == sections
    # the same scores with topic words the docs use: covered, and a candidate above the noise names it
    used = TopicWords([("payee", 0.7, 30), ("merge", 0.3, 12)], 0.0)
    low = [{"source": "pay.md", "heading_path": ["Payees"], "score": 0.65}]
    assert classify(turns, low, strong=0.7, noise=0.6, topic=used)[0] == "not_found"
    assert classify(turns, low, strong=0.7, noise=0.6)[0] == "missing"  # no topic words: the strong level decides
    below_noise = [{"source": "pay.md", "heading_path": ["Payees"], "score": 0.5}]
    assert classify(turns, below_noise, strong=0.7, noise=0.6, topic=used)[0] == "missing"


def test_a_cluster_whose_questions_name_what_no_chunk_holds_is_missing():
    from collections import Counter

    from fieldguide.gaps import cluster_unknown_names

    frequency = {"balance": 40, "sync": 12, "budget": 300, "crypto": 2, "stripe": 3}
    members = ["Can I connect my Bitcoin wallet so its balance updates by itself?",
               "Will my crypto exchange balances sync automatically?"]
    counts = Counter({members[0]: 1, members[1]: 1})
    assert cluster_unknown_names(members, counts, frequency) == ["Bitcoin"]  # half the turns name it
    assert cluster_unknown_names(members, Counter({members[0]: 1, members[1]: 3}), frequency) == []  # a stray one
    assert cluster_unknown_names(["Does the Stripe sync work?"], Counter({"Does the Stripe sync work?": 2}),
                                 frequency) == []  # a name the docs hold
    assert cluster_unknown_names(members, counts, None) == []  # no term statistics: nothing known
    # missing whatever the broad search scores, with the names as the reason
    sections = [{"source": "faq.md", "heading_path": ["FAQ"], "score": 0.9}]
    used = TopicWords([("sync", 0.7, 12), ("balance", 0.3, 40)], 0.0)
    turns = [_problem(m, ["abstained"]) for m in members]
    kind, reason, _, nearest = classify(turns, sections, strong=0.7, noise=0.6, topic=used, unknown=["Bitcoin"])
    assert kind == "missing" and '"Bitcoin"' in reason and "no chunk" in reason and nearest == sections
    assert classify(turns, sections, strong=0.7, noise=0.6, topic=used)[0] == "not_found"


def test_more_candidates_are_named_only_while_close_to_the_best():
    sections = [{"source": f"{n}.md", "heading_path": [], "score": score}
                for n, score in enumerate([0.9, 0.85, 0.8, 0.78, 0.75, 0.74, 0.5])]
    assert named_sections(sections, margin=0.13) == sections[:4]  # 0.78 within 0.13 of 0.9, 0.75 not
    assert named_sections(sections, margin=1.0) == sections[:NEAREST_MAX]
    assert named_sections(sections, margin=None) == sections[:3] and named_sections([], 0.1) == []
    kind, _, _, nearest = classify([_problem("q", ["abstained"])], sections, strong=0.7, noise=0.6, margin=0.13)
    assert kind == "not_found" and nearest == sections[:4]


def test_a_page_several_of_whose_sections_match_ranks_first():
    scores = {("lone.md", ("Aside",)): 0.60, ("page.md", ("Page", "How")): 0.58, ("page.md", ("Page", "Why")): 0.50,
              ("other.md", ()): 0.40}
    ranked = page_supported(scores)
    # 0.58 + 0.1 x 0.50 > 0.60 + nothing; 0.50 + 0.1 x 0.58 < 0.60
    assert ranked == [("page.md", ("Page", "How")), ("lone.md", ("Aside",)), ("page.md", ("Page", "Why")),
                      ("other.md", ())]
    assert page_supported(scores, support=0.0)[0] == ("lone.md", ("Aside",))
    assert PAGE_SUPPORT > 0
    # the levels and the margin go by the best score, wherever it ranks
    sections = [{"source": s, "heading_path": list(h), "score": scores[(s, h)]} for s, h in ranked]
    kind, reason, _, nearest = classify([_problem("q", ["abstained"])], sections, strong=0.59, noise=0.5,
                                        margin=0.05)
    assert kind == "not_found" and "lone.md#Aside at 0.600" in reason
    assert nearest == sections[:3]  # 0.40 is not within 0.05 of the best, 0.60


def _sections(scores):
    return [{"source": s, "heading_path": [], "score": score} for s, score in scores]


def test_each_searched_wording_names_its_own_best_sections():
    first = _sections([("a1.md", 0.9), ("a2.md", 0.89), ("a3.md", 0.88), ("a4.md", 0.87), ("a5.md", 0.86),
                       ("a6.md", 0.85)])
    second = _sections([("b1.md", 0.6), ("b2.md", 0.55), ("a1.md", 0.5)])
    pooled = sorted(first + second[:2], key=lambda s: -s["score"])
    # one ranking pooled over both wordings names only the first wording's sections
    assert "b1.md" not in [s["source"] for s in classify([_problem("q", ["abstained"])], pooled, strong=0.7,
                                                          noise=0.4, margin=0.1)[3]]
    kind, _, _, nearest = classify([_problem("q", ["abstained"])], pooled, strong=0.7, noise=0.4, margin=0.1,
                                   each=[first, second])
    names = [s["source"] for s in nearest]
    # rank by rank across the wordings, each section once with the best score it was given
    assert kind == "not_found" and names == ["a1.md", "b1.md", "a2.md", "b2.md", "a3.md", "a4.md", "a5.md"]
    assert nearest[0]["score"] == 0.9
    assert named_per_wording([first], 0.1) == named_sections(first, 0.1)  # one wording: as before
    assert named_per_wording([], 0.1) == []


class _Resources:
    """A store whose dense search returns the same three chunks for every question, and a scorer
    that scores them by which question asks."""

    calibration = term_stats = None

    class store:
        @staticmethod
        def near_vector(vector, k):
            return [{"chunk_id": n, "source": f"{n}.md", "heading_path": [], "text": ""} for n in "xyz"]

        @staticmethod
        def hybrid(question, vector, k):
            return []

    class reranker:
        @staticmethod
        def score(question, pool, term_stats=None):
            liked = {"first": {"x": 0.9, "y": 0.2, "z": 0.1}, "second": {"x": 0.1, "y": 0.3, "z": 0.8}}[question]
            return [liked[c["chunk_id"]] for c in pool]


def test_the_broad_search_ranks_each_wording_by_its_own_scores_and_pools_the_best():
    pooled, each = BroadSearch(_Resources()).search(["first", "second"], [[1.0], [1.0]])
    assert [(s["source"], s["score"]) for s in pooled] == [("x.md", 0.9), ("z.md", 0.8), ("y.md", 0.3)]
    assert [[s["source"] for s in ranked] for ranked in each] == [["x.md", "y.md", "z.md"], ["z.md", "y.md", "x.md"]]


def _report():
    turns = [_problem("How do I pay my staff?", ["abstained"]), _problem("How do I pay my staff?", ["abstained"]),
             _problem("Where is <the> export?", ["abstained"])]
    clusters = [Cluster("missing", turns[:2], ["How do I pay my staff?"], [], "nothing close", "Write it."),
                Cluster("not_found", turns[2:], ["Where is <the> export?"],
                        [{"source": "e.md", "heading_path": ["Export"], "score": 0.91}], "found e.md", "Reword e.md")]
    return GapReport(clusters, TurnSummary(turns=10, checked=3, unchecked=4, problems=turns), {}, 0.7, 0.6)


def test_formats_carry_the_task_list():
    report = _report()
    data = json.loads(RENDERERS["json"](report))
    assert [c["kind"] for c in data["clusters"]] == ["missing", "not_found"]
    first = data["clusters"][0]
    assert {"kind", "count", "questions", "nearest", "action"} <= set(first) and first["count"] == 2
    assert data["clusters"][1]["nearest"] == [{"source": "e.md", "heading_path": ["Export"], "score": 0.91}]
    rows = list(csv.reader(io.StringIO(RENDERERS["csv"](report))))
    assert rows[0][:2] == ["kind", "count"] and rows[2][3] == "e.md#Export (0.910)"
    md = RENDERERS["md"](report)
    assert "Missing from the docs" in md and "e.md#Export" in md and "4 answered turns carry no sentence checks" in md
    page = RENDERERS["html"](report)
    assert page.startswith("<!doctype html>") and "<svg" in page and "&lt;the&gt;" in page
    assert "<script" not in page and "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_empty_store_gives_an_empty_report():
    report = build_report(problem_turns([], []), lambda texts: [], None)
    assert report.clusters == []
    assert "Nothing to do" in RENDERERS["md"](report) and json.loads(RENDERERS["json"](report))["clusters"] == []


@pytest.mark.models
def test_wordings_of_one_need_cluster_together(embeddings):
    questions = ["How do I run payroll for my employees?", "Can the app pay my staff their wages?",
                 "Does the app work with Siri voice commands?",
                 "Can I use Siri voice commands to check my budget?"]
    summary = TurnSummary(problems=[_problem(q, ["abstained"]) for q in questions])
    threshold = probe_threshold(embeddings.embed_documents)
    assert 0.2 < threshold < 0.8
    report = build_report(summary, embeddings.embed_documents, None, threshold)
    groups = sorted(sorted(c.wordings) for c in report.clusters)
    assert groups == [sorted(questions[2:]), sorted(questions[:2])]


def test_stored_question_vectors_are_used_only_for_their_model():
    """A vector stored with the turn saves embedding its wording again, only when the same model made
    it; old records (no vector) and damaged ones are embedded."""
    turns = [
        _turn("a", 1, "stored", abstain=True, question_vector={"model": "m1", "vector": [1.0, 0.0]}),
        _turn("a", 2, "stored", abstain=True, question_vector={"model": "m1", "vector": [1.0, 0.0]}),
        _turn("b", 1, "other model", abstain=True, question_vector={"model": "m0", "vector": [0.0, 1.0]}),
        _turn("c", 1, "old record", abstain=True),
        _turn("d", 1, "damaged", abstain=True, question_vector={"model": "m1", "vector": ["x"]}),
    ]
    summary = problem_turns(turns, [], since=0.0)
    asked = []

    def embed(texts):
        asked.extend(texts)
        return [[0.0, 1.0] for _ in texts]

    report = build_report(summary, embed, None, threshold=0.9, model="m1")
    assert sorted(asked) == ["damaged", "old record", "other model"]
    assert report.embedded == 3 and report.to_dict()["embedded_wordings"] == 3
    assert sum(c.count for c in report.clusters) == 5
    asked.clear()
    report = build_report(summary, embed, None, threshold=0.9, model=None)  # no model named: embed all
    assert sorted(asked) == ["damaged", "old record", "other model", "stored"]


@pytest.mark.weaviate
@pytest.mark.models
def test_the_gaps_command_reuses_the_vectors_the_service_stored(weaviate_service, tmp_path, embeddings):
    """The whole report against a real index: a turn stored with its question's vector (as the
    service stores it) is not embedded again, an older turn without one is; a question on a topic
    the sample docs never name is missing, with the words that say so."""
    from fieldguide.commands.gaps import gap_report
    from fieldguide.embedding import question_vector_record, question_vector_space
    from fieldguide.service.state.sqlite import SqliteState
    from tests.conftest import ingested_collection

    with ingested_collection(weaviate_service, tmp_path / "data", embeddings, prefix="Gaps") as settings:
        settings = settings.model_copy(update={"state_url": f"sqlite:///{tmp_path}/state.sqlite"})
        stored = "How do I run payroll for my employees' wages?"
        older = "Which fields does the booking form have?"
        state = SqliteState(tmp_path / "state.sqlite")
        try:
            for conversation, question, vector in (("c1", stored, True), ("c2", older, False)):
                record = state.start(conversation, question)
                final = {"abstain": True, "answer": "The documentation does not say.", "sentences": [], "citations": []}
                if vector:
                    final["question_vector"] = question_vector_record(question_vector_space(settings),
                                                                      embeddings.embed_query(question))
                state.finish(record.finish("done", final))
        finally:
            state.close()
        report = json.loads(gap_report(settings, 0.0, "json", None))
    assert report["embedded_wordings"] == 1 and report["problem_turns"] == 2
    (payroll,) = [c for c in report["clusters"] if stored in c["questions"]]
    assert payroll["kind"] == "missing" and "payroll" in [w["word"] for w in payroll["topic_words"]]
    assert any(older in c["questions"] for c in report["clusters"])


# --- the sample docs' session of the coverage issue: what made two answered turns land in the wrong place ---

PRICE_CITATION = [{"source": "concepts/pricing.md", "heading_path": ["Prices, deposits and cancellations"]}]
MODEL_SENTENCE_LEFT_OUT = {"text": "It holds the count.", "support": 0.3, "kept": False, "origin": "generated",
                           "reason": "too little of it is in the docs"}
QUOTED_ROW = {"text": "| Life jackets | yes | Number of life jackets handed out. |", "support": 1.0, "kept": True,
              "origin": "evidence"}


def test_an_answer_whose_quotes_answered_is_no_problem_though_the_models_sentences_were_left_out():
    """"Which field holds the number of life jackets?" was answered with the right table row and not
    voted on; the small model's own sentence was left out by the check (as in nearly every local
    answer) and that alone made the turn a problem, which the report then listed as a missing topic."""
    turns = [_turn("jackets", 1, "Which field holds the number of life jackets?", abstain=False,
                   coverage="covered", sentences=[QUOTED_ROW, MODEL_SENTENCE_LEFT_OUT])]
    summary = problem_turns(turns, [], since=0.0)
    assert summary.turns == 1 and summary.checked == 1 and summary.problems == []


def test_a_voted_down_answer_stays_disliked_beside_other_problem_turns_on_its_topic():
    """"How is the price of a booking made up?" was answered and voted down; the cryptocurrency and
    bitcoin questions about paying for a booking were answered with quotes of the same pricing
    section. Clustered together, the one vote lost to the other turns and the cluster was searched
    and reported as a topic the docs hold but answers did not find."""
    turns = [
        _turn("price", 1, "How is the price of a booking made up?", abstain=False, coverage="covered",
              citations=PRICE_CITATION, sentences=[QUOTED_ROW, MODEL_SENTENCE_LEFT_OUT]),
        _turn("crypto", 1, "Can I pay for a booking with cryptocurrency?", abstain=False, coverage="partial",
              citations=PRICE_CITATION, sentences=[QUOTED_ROW, MODEL_SENTENCE_LEFT_OUT]),
        _turn("bitcoin", 1, "Do you accept bitcoin for rentals?", abstain=False, coverage="partial",
              citations=PRICE_CITATION, sentences=[QUOTED_ROW]),
        _turn("points", 1, "Can I pay for a booking with loyalty points?", abstain=True, coverage="not_covered"),
    ]
    feedback = [{"conversation_id": "price", "turn": 1, "rating": "down", "comment": "", "at": 5.0}]
    summary = problem_turns(turns, feedback, since=0.0)
    assert {p.asked: p.reasons for p in summary.problems} == {
        "How is the price of a booking made up?": ["disliked"],
        "Can I pay for a booking with cryptocurrency?": ["partial"],
        "Do you accept bitcoin for rentals?": ["partial"],
        "Can I pay for a booking with loyalty points?": ["abstained"]}
    same_topic = lambda texts: [[1.0, 0.0] for _ in texts]  # every wording reads alike to the model
    report = build_report(summary, same_topic, None, threshold=0.5)
    kinds = {c.kind: sorted(c.wordings) for c in report.clusters}
    assert kinds["disliked"] == ["How is the price of a booking made up?"]
    assert kinds["partial"] == ["Can I pay for a booking with cryptocurrency?", "Do you accept bitcoin for rentals?"]
    assert kinds["missing"] == ["Can I pay for a booking with loyalty points?"]  # no search in this test


def test_partial_answers_are_a_gap_kind_of_their_own_in_every_format():
    turns = [_turn(f"c{i}", 1, q, abstain=False, coverage="partial", citations=PRICE_CITATION,
                   coverage_reason="the docs never name Bitcoin")
             for i, q in enumerate(["Can I pay with Bitcoin?", "Do you take Bitcoin?"])]
    report = build_report(problem_turns(turns, [], since=0.0), lambda texts: [[1.0, 0.0] for _ in texts], None,
                          threshold=0.5)
    (cluster,) = report.clusters
    assert cluster.kind == "partial" and cluster.count == 2
    assert cluster.nearest == [{"source": "concepts/pricing.md", "heading_path": ["Prices, deposits and cancellations"],
                                "score": None, "cited": 2}]
    assert "2 of 2 answers told the reader the docs may not answer this" in cluster.reason
    data = json.loads(RENDERERS["json"](report))
    assert data["clusters"][0]["kind"] == "partial" and data["clusters"][0]["action"]
    assert "Only partly covered" in RENDERERS["md"](report) and "Only partly covered" in RENDERERS["html"](report)
    assert next(csv.reader(io.StringIO(RENDERERS["csv"](report).splitlines()[1])))[0] == "partial"
