"""Unicode word rules, Okapi BM25 with index statistics, and the fallback scorer built on them."""
from __future__ import annotations

import math

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from fieldguide.bm25 import B, HEADING_TF, K1, TermStats, bm25_scores, document_words, relative_scores
from fieldguide.reranker import LexicalFallbackScorer
from fieldguide.words import words


def test_words_keep_every_script_and_fold_case_and_forms():
    assert words("Where do I turn OFF the Dark-mode?") == ["where", "do", "i", "turn", "off", "the", "dark", "mode"]
    assert words("Где находится кнопка «Экспорт»?") == ["где", "находится", "кнопка", "экспорт"]
    assert words("Ärger über Größe ﬁle") == ["ärger", "über", "grösse", "file"]  # casefold + NFKC
    assert words("naïve") == words("nai\u0308ve") == ["naïve"]  # composed and decomposed accents agree
    assert words("हिन्दी भाषा") == ["हिन्दी", "भाषा"]  # combining vowel signs stay inside the word
    assert words("東京のデータ") == ["東", "京", "の", "データ"]  # ideographs one by one, katakana runs whole
    assert words("snake_case v2.5") == ["snake", "case", "v2", "5"]


@hsettings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_text_gets_the_words_the_unicode_rules_find(text):
    # ASCII text takes a faster path; it must find exactly what the general rules find
    from fieldguide.words import _WORD, normalise

    assert words(text) == _WORD.findall(normalise(text))
    assert words(text + "é") == _WORD.findall(normalise(text + "é"))  # the general path, beside it


def test_idf_follows_lucene_and_never_goes_negative():
    stats = TermStats.from_documents([["a", "b"], ["a"], ["a", "c"], ["a"]])
    assert stats.documents == 4 and stats.mean_length == 1.5
    assert math.isclose(stats.idf("c"), math.log(1 + (4 - 1 + 0.5) / (1 + 0.5)))
    assert 0 < stats.idf("a") < stats.idf("c") < stats.idf("never-seen")


def test_bm25_is_the_standard_formula():
    stats = TermStats.from_documents([["export", "csv", "csv"], ["import"], ["export"]])
    doc = ["export", "csv", "csv"]
    expected = 0.0
    for term, tf in (("export", 1), ("csv", 2)):
        norm = K1 * (1 - B + B * len(doc) / stats.mean_length)
        expected += stats.idf(term) * tf * (K1 + 1) / (tf + norm)
    assert math.isclose(bm25_scores(["export", "csv", "export"], [doc], stats)[0], expected)


def test_relative_scores_use_the_index_statistics_when_given():
    documents = [document_words(["Reports"], "export the report"), document_words(["Team"], "invite members")]
    # in the whole index "report" is everywhere and "invite" is rare: the index's idf decides
    index = TermStats(1000, 12.0, {"report": 900, "reports": 900, "export": 20, "invite": 5, "members": 50})
    own = relative_scores("invite a report", documents, None)
    with_index = relative_scores("invite a report", documents, index)
    assert with_index[1] > with_index[0]
    assert own != with_index


def test_heading_words_count_more_than_body_words():
    assert document_words(["Export"], "csv") == ["export"] * HEADING_TF + ["csv"]


def test_a_chunk_s_words_are_kept_but_each_caller_gets_its_own_list():
    first = document_words(["Export"], "csv files")
    first.append("changed")
    assert document_words(["Export"], "csv files") == ["export"] * HEADING_TF + ["csv", "files"]


def test_term_stats_survive_storage_and_bad_text_is_no_stats():
    stats = TermStats.from_documents([["где", "кнопка"], ["кнопка"]])
    again = TermStats.from_text(stats.to_text())
    assert again == stats
    assert TermStats.from_text("not base64 at all!") is None and TermStats.from_text("") is None


def test_the_scorer_reads_cyrillic_where_ascii_rules_saw_nothing():
    scorer = LexicalFallbackScorer()
    candidates = [
        {"chunk_id": "a", "similarity": 0.40, "heading_path": ["Отчёты"], "text": "Отчёты показывают расходы за месяц."},
        {"chunk_id": "b", "similarity": 0.38, "heading_path": ["Экспорт"],
         "text": "Чтобы выгрузить данные, нажмите кнопку «Экспорт» на панели инструментов."},
    ]
    scores = scorer.score("Где кнопка «Экспорт»?", candidates)
    assert scores[1] > scores[0]  # the lexical part moved the chunk that holds the words above a nearer one
    assert scores[0] == 0.40  # no shared word: cosine alone


def test_no_question_words_means_cosine_alone():
    scorer = LexicalFallbackScorer()
    assert scorer.score("???", [{"chunk_id": "a", "similarity": 0.5, "text": "x"}]) == [0.5]


def test_a_change_applied_to_stored_statistics_gives_what_a_full_count_gives():
    from dataclasses import replace

    from fieldguide.bm25 import TermStatsChange

    before = [["export", "csv"], ["import", "csv", "csv"], ["budget"], ["export", "report"]]
    stored = TermStats.from_text(TermStats.from_documents(before).to_text())
    change = TermStatsChange()
    change.remove(["import", "csv", "csv"])  # a file edited: its old chunk out ...
    change.add(["import", "bank", "file"])  # ... its new chunk in
    change.remove(["budget"])  # a file deleted
    change.add(["sync", "phone"])  # a file added
    after = [["export", "csv"], ["import", "bank", "file"], ["export", "report"], ["sync", "phone"]]
    assert change.applied_to(stored) == TermStats.from_documents(after)
    assert "budget" not in change.applied_to(stored).document_frequency

    # statistics that never counted what the change removes cannot be updated by it
    assert change.applied_to(TermStats.from_documents([["export"]])) is None
    # the mark an updating ingest leaves is stored, and read back
    assert TermStats.from_text(replace(stored, ingest_pending=True).to_text()).ingest_pending


def test_the_stored_total_length_keeps_the_mean_exact_where_a_rounded_mean_would_drift():
    stats = TermStats.from_documents([["a"] * 1, ["b"] * 2, ["c"] * 2])  # mean 5/3
    assert TermStats.from_text(stats.to_text()).total_length == 5
    assert TermStats.from_text(stats.to_text()).mean_length == stats.mean_length
