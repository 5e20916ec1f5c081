import pytest

from fakes import config_for, make_resources, record
from fieldguide.errors import ModelMismatch
from fieldguide.reranker import LexicalFallbackScorer
from graph.options import QueryOptions
from nodes.cap import cap
from nodes.embed import embed
from nodes.rerank import rerank
from nodes.search import merge_candidates, search
from nodes.threshold import threshold

RECORDS = [
    record("export", "Export your invoices as CSV from the reports page.", heading_path=("Reports", "Export")),
    record("export-screen", "The Export button sits in the toolbar of the Reports screen.",
           heading_path=("Reports screen",), content_kind="screen"),
    record("taxes", "Taxes are calculated per line and rounded per invoice.", heading_path=("Taxes",)),
    record("members", "Members can be invited by email from the team settings.", heading_path=("Team",)),
]


def cand(chunk_id, similarity, **kwargs):
    return dict(record(chunk_id, kwargs.pop("text", chunk_id), **kwargs), similarity=similarity)


def test_embed_uses_the_configured_model_and_times_itself():
    resources = make_resources(RECORDS)
    update = embed({"question": "export invoices", "timings_ms": {"route": 0.1}}, config_for(resources))
    assert len(update["query_vector"]) == 64
    assert resources.embeddings.calls == 1
    assert set(update["timings_ms"]) == {"route", "embed"}


def test_embed_refuses_an_index_built_with_another_model():
    resources = make_resources(RECORDS, model_id="another/model")
    with pytest.raises(ModelMismatch, match="--reindex"):
        embed({"question": "export invoices"}, config_for(resources))


def test_search_merges_screen_only_candidates_for_screen_questions():
    resources = make_resources(RECORDS)
    vector = resources.embeddings.embed_query("export invoices")
    config = config_for(resources, k=2, screen_k=1)
    update = search({"question": "q", "intent": "screen", "query_vector": vector}, config)
    assert resources.store.calls == [("near_vector", 2, None), ("near_vector", 1, "screen")]
    ids = [c["chunk_id"] for c in update["search_results"]]
    assert "export-screen" in ids
    assert update["stages"]["search"] == ids
    sims = [c["similarity"] for c in update["search_results"]]
    assert sims == sorted(sims, reverse=True)


def test_search_for_conceptual_questions_searches_once():
    resources = make_resources(RECORDS)
    vector = resources.embeddings.embed_query("taxes")
    search({"question": "q", "intent": "conceptual", "query_vector": vector}, config_for(resources, k=3))
    assert resources.store.calls == [("near_vector", 3, None)]


def test_merge_keeps_the_best_similarity_once():
    merged = merge_candidates([cand("a", 0.5), cand("b", 0.4)], [cand("a", 0.6), cand("c", 0.9)])
    assert [(c["chunk_id"], c["similarity"]) for c in merged] == [("c", 0.9), ("a", 0.6), ("b", 0.4)]


def test_threshold_drops_low_similarity():
    state = {"search_results": [cand("a", 0.5), cand("b", 0.29), cand("c", 0.3)]}
    update = threshold(state, config_for(make_resources([]), min_similarity=0.3))
    assert update["stages"]["threshold"] == ["a", "c"]


def test_fallback_scorer_prefers_chunks_with_the_question_terms():
    scorer = LexicalFallbackScorer()
    candidates = [cand("vague", 0.50, text="General notes about the application."),
                  cand("exact", 0.45, text="To archive a project open its settings and press Archive.",
                       heading_path=("Projects", "Archive a project"))]
    scores = scorer.score("How do I archive a project?", candidates)
    assert scores[1] > scores[0]


def test_rerank_orders_by_score_and_can_be_switched_off():
    candidates = [cand("vague", 0.50, text="General notes."),
                  cand("exact", 0.45, text="Archive a project from its settings.")]
    state = {"question": "archive a project", "threshold_results": candidates}
    on = rerank(state, config_for(make_resources([])))
    assert [c["chunk_id"] for c in on["rerank_results"]] == ["exact", "vague"]
    off = rerank(state, config_for(make_resources([]), reranker=False))
    assert [c["rerank_score"] for c in off["rerank_results"]] == [0.5, 0.45]


def test_a_rules_condensed_follow_up_is_scored_lexically_on_its_own_words():
    # The previous answer came from "Projects > Archive a project"; the follow-up moves on to
    # the neighbouring section. The carried breadcrumb repeats the previous section's heading, so
    # letting BM25 read it would rank that section first again.
    previous = cand("archive", 0.50, text="Open the project's settings and press Archive.",
                    heading_path=("Projects", "Archive a project"))
    neighbour = cand("restore", 0.50, text="A project put away comes back from the Trash view.",
                     heading_path=("Projects", "Restore a project"))
    state = {"question": "Can I get it back later?", "condensed_by": "rules",
             "standalone_question": "Can I get it back later? — about: Projects > Archive a project",
             "threshold_results": [previous, neighbour]}
    ranked = rerank(state, config_for(make_resources([])))["rerank_results"]
    assert [c["chunk_id"] for c in ranked] == ["restore", "archive"]
    assert ranked[1]["rerank_score"] == 0.5  # none of the follow-up's own words is in it: its cosine alone
    by_model = dict(state, condensed_by="model")  # a model's rewrite is a question in its own words
    assert rerank(by_model, config_for(make_resources([])))["rerank_results"][0]["chunk_id"] == "archive"


def test_a_follow_up_leans_on_the_sections_of_its_previous_answers_page_that_it_names():
    # "And the statuses?" after an answer from the access-control page: the section the follow-up
    # moved to sits on that page, below another page's section; the page's other section, which
    # the follow-up's words do not name, gets no prior
    page = "auth/access-control.md"
    here = cand("statuses", 0.40, text="Active and suspended users.", source=page, heading_path=("Statuses",))
    sibling = cand("public", 0.55, text="What anyone may read.", source=page, heading_path=("Public Role",))
    elsewhere = cand("login", 0.60, text="Statuses are shown on the sign-in page.", source="auth/login.md",
                     heading_path=("Sign-on",))
    state = {"question": "And the statuses?", "condensed_by": "rules",
             "standalone_question": "And the statuses? — about: Public Role",
             "follow_up_page": page, "threshold_results": [elsewhere, sibling, here]}
    resources = make_resources([])
    scored = lambda update: {c["chunk_id"]: c["rerank_score"] for c in update["rerank_results"]}
    before = scored(rerank(dict(state, follow_up_page=""), config_for(resources, abstain_margin=0.1)))
    assert before["login"] > before["statuses"]
    after = rerank(state, config_for(resources, abstain_margin=0.1))
    assert [c["chunk_id"] for c in after["rerank_results"]] == ["statuses", "login", "public"]
    # the prior is counted in abstain margins: 2.5 × 0.1 on the named section of the page only
    assert scored(after)["statuses"] == pytest.approx(before["statuses"] + 0.25)
    assert scored(after)["public"] == before["public"] and scored(after)["login"] == before["login"]
    off = rerank(state, config_for(resources, abstain_margin=0.1, follow_up_page_prior=0))
    assert scored(off) == before


def test_cap_applies_minimum_then_maximum():
    ranked = [dict(cand(x, 0.5), rerank_score=s) for x, s in [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.1)]]
    # sections of the usual size: their words fill the budget, so the maximum is a hard one
    update = cap({"rerank_results": ranked, "search_results": ranked}, config_for(make_resources([]),
                 rerank_min=0.5, max_chunks=2, context_token_budget=1))
    assert update["stages"]["cap"] == ["a", "b"]
    assert update["abstain"] is False


def test_small_sections_let_more_past_the_maximum_up_to_twice_as_many():
    ranked = [dict(cand(x, 0.5), rerank_score=s, token_count=30)
              for x, s in [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.65), ("e", 0.6), ("f", 0.1)]]
    state = {"rerank_results": ranked, "search_results": ranked}
    # 2 x 30 tokens hold under 40 % of 400: more come in, and stop at twice the maximum
    roomy = cap(state, config_for(make_resources([]), rerank_min=0.5, max_chunks=2, context_token_budget=400))
    assert roomy["stages"]["cap"] == ["a", "b", "c", "d"]
    # until those taken hold 40 % of the budget: 90 tokens of 200
    assert cap(state, config_for(make_resources([]), rerank_min=0.5, max_chunks=2,
                                 context_token_budget=200))["stages"]["cap"] == ["a", "b", "c"]
    # never one under the strict minimum
    assert "f" not in cap(state, config_for(make_resources([]), rerank_min=0.5, max_chunks=4,
                                            context_token_budget=4000))["stages"]["cap"]


def test_cap_passes_on_the_subsections_of_kept_sections_that_the_cut_left_out_apart():
    ranked = [dict(cand("cast", 0.5, heading_path=("Casting",)), rerank_score=0.9),
              dict(cand("other", 0.5, heading_path=("Sharing",)), rerank_score=0.85),
              dict(cand("enable", 0.5, heading_path=("Casting", "Enable")), rerank_score=0.4),
              dict(cand("elsewhere", 0.5, heading_path=("Sharing", "Links"), source="other.md"), rerank_score=0.3)]
    update = cap({"rerank_results": ranked, "search_results": ranked},
                 config_for(make_resources([]), rerank_min=0.5, max_chunks=1, context_token_budget=1))
    assert update["stages"]["cap"] == ["cast"]  # max_chunks bounds what the cut keeps
    assert [c["chunk_id"] for c in update["below_cut"]] == ["enable"]
    off = config_for(make_resources([]), rerank_min=0.5, max_chunks=1, use_reassembly=False, context_token_budget=1)
    assert cap({"rerank_results": ranked, "search_results": ranked}, off)["below_cut"] == []
    nothing = cap({"rerank_results": ranked, "search_results": ranked}, config_for(make_resources([]), rerank_min=2))
    assert nothing["abstain"] and nothing["below_cut"] == []


def test_cap_drops_near_copies_before_the_maximum_when_asked():
    text = ("Open Settings, then Advanced, and press Reset budget cache to rebuild every cached value. "
            "This can take a while on a large budget file, and the app reloads when it is done.")
    ranked = [dict(cand("a", 0.5, text=text, source="settings.md"), rerank_score=0.9),
              dict(cand("a-copy", 0.5, text=text.replace("large", "big"), source="tour.md"), rerank_score=0.85),
              dict(cand("b", 0.5, text="Budget ID is shown under Advanced settings."), rerank_score=0.8)]
    config = config_for(make_resources([]), rerank_min=0.5, max_chunks=2, context_token_budget=1)
    assert cap({"rerank_results": ranked}, config)["stages"]["cap"] == ["a", "a-copy"]
    config["configurable"]["dedupe"] = True
    assert cap({"rerank_results": ranked}, config)["stages"]["cap"] == ["a", "b"]


def test_cap_abstains_and_names_the_nearest_sections_when_nothing_survives():
    pool = [cand("a", 0.2, heading_path=("Billing",)), cand("b", 0.3, heading_path=("Team",), source="team.md")]
    ranked = [dict(c, rerank_score=0.1) for c in pool]
    update = cap({"rerank_results": ranked, "search_results": pool}, config_for(make_resources([]), rerank_min=0.5))
    assert update["abstain"] is True and update["cap_results"] == []
    assert [n["heading_path"] for n in update["nearest"]] == [["Team"], ["Billing"]]


def test_the_nearest_sections_follow_the_scorer_when_the_candidates_were_reranked():
    pool = [cand("a", 0.6, heading_path=("Release notes",), source="changelog.md"),
            cand("b", 0.5, heading_path=("Reconcile",), source="reconcile.md"),
            cand("c", 0.3, heading_path=("Accounts",), source="accounts.md")]
    ranked = [dict(pool[1], rerank_score=0.45), dict(pool[0], rerank_score=0.41)]  # c fell under the threshold
    config = config_for(make_resources([]), rerank_min=0.5)
    update = cap({"rerank_results": ranked, "search_results": pool}, config)
    assert [n["source"] for n in update["nearest"]] == ["reconcile.md", "changelog.md"]
    update = cap({"rerank_results": [], "search_results": pool}, config)  # nothing passed: cosine decides
    assert [n["source"] for n in update["nearest"]] == ["changelog.md", "reconcile.md", "accounts.md"]


def test_options_read_per_request_overrides_and_fall_back_to_settings():
    resources = make_resources([], max_chunks=7)
    options = QueryOptions.from_config({"configurable": {"resources": resources, "k": "20",
                                                         "reranker": "false", "min_similarity": 0.4}})
    assert (options.search_k, options.use_reranker, options.min_similarity, options.max_chunks) == (20, False, 0.4, 7)


def ranked_pool(scores):
    return [dict(cand(f"c{n}", 0.5), rerank_score=s) for n, s in enumerate(scores)]


def test_cap_abstains_when_the_best_does_not_stand_out_from_its_own_candidates():
    flat = ranked_pool([0.62, 0.61, 0.60, 0.60, 0.59, 0.58, 0.58, 0.57])
    update = cap({"rerank_results": flat, "search_results": flat},
                 config_for(make_resources([]), abstain_margin=0.1, rerank_min=0.0))
    assert update["abstain"] is True and update["cap_results"] == []
    assert "stands 0.025 above the median" in update["abstain_reason"] and "0.100 needed" in update["abstain_reason"]
    clear = ranked_pool([0.80, 0.61, 0.60, 0.60, 0.59, 0.58, 0.58, 0.57])
    kept = cap({"rerank_results": clear}, config_for(make_resources([]), abstain_margin=0.1, rerank_min=0.0))
    assert kept["abstain"] is False and kept["abstain_reason"] == ""


def test_cap_keeps_only_chunks_within_the_window_below_the_best():
    from fieldguide.calibration import Calibration

    resources = make_resources([], rank_window=2.0)
    resources._calibration = Calibration(rerank_min=0.3, abstain_margin=0.1, margin_unit=0.05, screen_share=0.2,
                                         scorer="lexical-fallback", chunks=10, probes=30)
    pool = [dict(c, token_count=200) for c in ranked_pool([0.90, 0.85, 0.81, 0.79, 0.5, 0.4, 0.4, 0.4])]
    update = cap({"rerank_results": pool}, config_for(resources, abstain_margin=None, rerank_min=None))
    assert update["stages"]["cap"] == ["c0", "c1", "c2"]  # within 2 x 0.05 of 0.90
    # the calibrated strict minimum applies too: nothing reaches 0.95
    none = cap({"rerank_results": pool}, config_for(resources, abstain_margin=None, rerank_min=0.95))
    assert none["abstain"] is True and "strict minimum 0.950" in none["abstain_reason"]


def test_a_small_context_reaches_further_below_the_best_than_the_window():
    """A short best candidate standing far above the rest narrowed the window to itself: while the
    kept chunks hold under 40 % of the context budget, the next ones within 1.5 windows come too,
    up to the maximum."""
    from fieldguide.calibration import Calibration

    resources = make_resources([], rank_window=2.0, max_chunks=4, context_token_budget=800)
    resources._calibration = Calibration(rerank_min=0.3, abstain_margin=0.1, margin_unit=0.05, screen_share=0.2,
                                         scorer="lexical-fallback", chunks=10, probes=30)
    scores = [0.90, 0.79, 0.77, 0.76, 0.74, 0.5, 0.4, 0.4]

    def kept(size):
        pool = [dict(c, token_count=size) for c in ranked_pool(scores)]
        return cap({"rerank_results": pool}, config_for(resources, abstain_margin=None,
                                                        rerank_min=None))["stages"]["cap"]

    # 2 x 0.05 below 0.90 keeps c0 alone; 1.5 windows (0.75) let c1-c3 in while they are small
    assert kept(40) == ["c0", "c1", "c2", "c3"]
    assert kept(150) == ["c0", "c1", "c2"]  # c0 and c1 hold 300 tokens, under 320 (40 % of 800): c2 tips it over
    assert kept(400) == ["c0"]  # the best alone holds half the budget: the window decides


def test_names_are_the_words_a_reader_capitalises_past_a_sentence_start_or_twice():
    from fieldguide.names import names_in

    assert names_in("Can I use a hardware key like a YubiKey for it instead?") == ["YubiKey"]
    assert names_in("Is Plausible HIPAA compliant, and will you sign a BAA?") == ["Plausible", "HIPAA", "BAA"]
    assert names_in("I'm on macOS. Does it go to my Dropbox?") == ["macOS", "Dropbox"]
    # a capital past a lower-case first letter marks a brand, even where a sentence starts
    assert names_in("Does it work in Safari on my iPhone too?") == ["Safari", "iPhone"]
    assert names_in("eBay orders: can I import them?") == ["eBay"]
    # sentence starts, "I" and the calendar are no names
    assert names_in("We shipped last Tuesday. Can I line up Mondays with the May report?") == []
    assert names_in('And then? "Where" is it?') == []
    # values the reader typed are no names: the docs show their pattern, never the value itself
    assert names_in("What if my labels say DOC00042 instead, as on INV-2024-17?") == []
    assert names_in("Could it live in an S3 bucket?") == ["S3"]
    # a word is whole: "2FA" is one name, never "FA" cut after its digit
    assert names_in("Can users who passed 2FA skip it?") == ["2FA"]
    # quoted words are the reader's own values (a tag they made), not things the docs would name
    assert names_in("I made 'Insurance' a child of 'Finance'. Does Paperless keep Finance?") == ["Paperless"]
    assert names_in('My tag \u201cTax Returns\u201d vanished from Dropbox') == ["Dropbox"]
    assert names_in("The client's Nextcloud isn't synced") == ["Nextcloud"]  # apostrophes quote nothing


def test_unknown_names_are_the_ones_no_chunk_holds_and_the_conversation_did_not_use():
    from fieldguide.bm25 import TermStats
    from fieldguide.names import unknown_names

    stats = TermStats.from_documents([["plausible", "goals", "stripe"], ["two", "factor", "authenticator", "app"]])
    frequency = stats.document_frequency
    question = "Can Plausible send my Stripe revenue to a YubiKey or to Dropbox?"
    assert unknown_names(question, frequency) == ["YubiKey", "Dropbox"]
    assert unknown_names(question, frequency, known_text="How do I back up to Dropbox?") == ["YubiKey"]
    assert unknown_names("Do Stripes work?", frequency) == []  # the index's word, in the plural
    assert unknown_names(question, None) == []  # an index without statistics: nothing is known to be missing


def test_a_name_phrase_is_unknown_when_no_searched_section_holds_its_names_side_by_side():
    from fieldguide.names import name_phrases, unknown_name_phrases

    # "photoprism" stands in many chunks: the product's own name; "google" and "maps" in a few
    frequency = {"photoprism": 40, "google": 3, "maps": 5, "api": 9, "microsoft": 1, "teams": 2}
    assert name_phrases("Can I plug my own Google Maps API key into PhotoPrism Places?", frequency, 500) == \
        [["Google", "Maps"]]  # a short acronym and the product's own name end a run
    searched = ["Google Photos albums can be imported.", "The places view shows photos on world maps."]
    assert unknown_name_phrases("Can I use my own Google Maps key?", searched, frequency, 500) == ["Google Maps"]
    # a section that holds two of the names side by side knows the phrase, whatever follows
    assert unknown_name_phrases("Does it post to Microsoft Teams Channels?", ["Send alerts to Microsoft teams."],
                                frequency, 500) == []
    assert unknown_name_phrases("Can I use my own Google Maps key?", searched, None, 0) == []
    assert unknown_name_phrases("Can I use my own Google Maps key?", [], frequency, 500) == []


def follow_up_state(question, ranked, condensed_by="rules"):
    from langchain_core.messages import AIMessage, HumanMessage

    return {"question": question, "standalone_question": f"{question} — about: Two-factor authentication",
            "condensed_by": condensed_by, "rerank_results": ranked, "search_results": ranked,
            "messages": [HumanMessage(content="Where do I switch on two-factor authentication?"),
                         AIMessage(content="Open Account settings."), HumanMessage(content=question)]}


def test_a_follow_up_that_names_what_the_docs_never_mention_abstains():
    from fieldguide.bm25 import TermStats

    resources = make_resources([])
    resources._term_stats = TermStats.from_documents([["two", "factor", "authenticator", "app", "account"]])
    ranked = ranked_pool([0.9, 0.5, 0.4, 0.4])  # the carried topic's section stands out
    config = config_for(resources, abstain_margin=0.1, rerank_min=0.0)
    update = cap(follow_up_state("Can I use a YubiKey for it instead of an app?", ranked), config)
    assert update["abstain"] is True and update["cap_results"] == [] and update["nearest"]
    assert update["abstain_reason"] == "the follow-up names YubiKey, which no section of the docs mentions"
    assert update["unmentioned"] == ["YubiKey"]
    assert cap(follow_up_state("Can I use a YubiKey for it?", ranked, "model"), config)["abstain"] is True
    # a name the docs hold, a follow-up without a name, or a question that stands alone: the margin decides
    assert cap(follow_up_state("Can I use the Authenticator app for it?", ranked), config)["abstain"] is False
    assert cap(follow_up_state("Can I turn it off again?", ranked), config)["abstain"] is False
    alone = dict(follow_up_state("Can I use a YubiKey for two-factor?", ranked, "none"), messages=[])
    assert cap(alone, config)["abstain"] is False


def test_the_reader_is_told_what_the_docs_do_not_mention():
    from nodes.generate import abstain_message

    nearest = [{"source": "2fa.md", "heading_path": ["Two-factor authentication"]}]
    assert abstain_message(nearest, ["YubiKey"]).startswith(
        "The documentation does not mention YubiKey, so I can't answer this from the docs. The closest sections are "
        '"Two-factor authentication" (2fa.md).')
    assert abstain_message([], ["Bitcoin", "Ethereum", "Coinbase"]) == (
        "The documentation does not mention Bitcoin, Ethereum or Coinbase, so I can't answer this from the docs.")
    assert abstain_message([]) == "The documentation does not cover this question, so I can't answer it from the docs."


def test_a_follow_up_that_stands_out_too_little_keeps_the_closest_candidates_instead_of_abstaining():
    from fieldguide.calibration import Calibration

    resources = make_resources([], rank_window=2.0)
    resources._calibration = Calibration(rerank_min=0.3, abstain_margin=0.1, margin_unit=0.05, screen_share=0.2,
                                         scorer="lexical-fallback", chunks=10, probes=30)
    flat = ranked_pool([0.62, 0.61, 0.60, 0.59, 0.58, 0.45, 0.44, 0.43])
    config = config_for(resources, abstain_margin=0.1, rerank_min=0.0)
    update = cap(follow_up_state("And how do I get rid of it later?", flat), config)
    assert update["abstain"] is False and update["abstain_reason"] == ""
    assert [c["chunk_id"] for c in update["cap_results"]] == ["c0", "c1", "c2", "c3", "c4"]  # the window's
    assert "stands 0.035 above the median" in update["closest_only"]
    # none reaches the strict minimum: the closest within the window still
    low = cap(follow_up_state("And how do I get rid of it later?", ranked_pool([0.9, 0.2, 0.1, 0.1])),
              config_for(resources, abstain_margin=0.1, rerank_min=0.95))
    assert [c["chunk_id"] for c in low["cap_results"]] == ["c0"] and "strict minimum 0.950" in low["closest_only"]
    # a question that stands alone and misses the margin by more than the band abstains as before;
    # so does a follow-up with the switch off
    alone = cap(dict(follow_up_state("How do I delete an allowlist?", flat, "none"), messages=[]), config)
    assert alone["abstain"] is True and alone["closest_only"] == "" and "stands 0.035" in alone["abstain_reason"]
    off = cap(follow_up_state("And how do I get rid of it later?", flat),
              config_for(resources, abstain_margin=0.1, rerank_min=0.0, closest_for_follow_ups=False,
                         partial_band=1.0))
    assert off["abstain"] is True and off["closest_only"] == ""
    # one that stands out is kept as usual, with nothing to say about it
    clear = cap(follow_up_state("And how do I get rid of it later?", ranked_pool([0.9, 0.5, 0.4, 0.4])), config)
    assert clear["abstain"] is False and clear["closest_only"] == ""


def test_a_question_that_narrowly_misses_the_thresholds_keeps_its_closest_candidates():
    from fieldguide.calibration import Calibration
    from nodes.cap import near_miss

    resources = make_resources([], rank_window=2.0)
    resources._calibration = Calibration(rerank_min=0.3, abstain_margin=0.1, margin_unit=0.05, screen_share=0.2,
                                         scorer="lexical-fallback", chunks=10, probes=30)
    alone = lambda ranked: dict(follow_up_state("How do I delete an allowlist?", ranked, "none"), messages=[])  # noqa: E731
    # the best stands 0.07 above the median (0.7 of the margin): within a band of 0.6, not of 0.8
    near = [dict(c, text="To delete an allowlist, run the delete command.") for c in
            ranked_pool([0.66, 0.61, 0.60, 0.59, 0.59, 0.58, 0.45, 0.44])]
    update = cap(alone(near), config_for(resources, abstain_margin=0.1, rerank_min=0.0, partial_band=0.6))
    assert update["abstain"] is False and "stands 0.070 above the median" in update["closest_only"]
    assert [c["chunk_id"] for c in update["cap_results"]] == ["c0", "c1", "c2", "c3", "c4", "c5"]
    assert cap(alone(near), config_for(resources, abstain_margin=0.1, rerank_min=0.0, partial_band=0.8))["abstain"]
    assert cap(alone(near), config_for(resources, abstain_margin=0.1, rerank_min=0.0, partial_band=1.0))["abstain"]
    # closest sections that hold none of the question's words: a miss by chance, which abstains
    elsewhere = [dict(c, text="Bake the bread for forty minutes.") for c in near]
    unheld = cap(alone(elsewhere), config_for(resources, abstain_margin=0.1, rerank_min=0.0, partial_band=0.6))
    assert unheld["abstain"] is True and unheld["closest_only"] == ""
    assert unheld["abstain_reason"].endswith("; the closest sections hold 0% of the question's weight")
    # short of the strict minimum by less than the rest of a margin (0.04 of 0.1 left by a band of 0.6)
    clear = [dict(c, text="To delete an allowlist, run the delete command.") for c in
             ranked_pool([0.66, 0.40, 0.40, 0.39, 0.38])]
    short = cap(alone(clear), config_for(resources, abstain_margin=0.1, rerank_min=0.69, partial_band=0.6))
    assert short["abstain"] is False and "strict minimum 0.690" in short["closest_only"]
    assert cap(alone(clear), config_for(resources, abstain_margin=0.1, rerank_min=0.71, partial_band=0.6))["abstain"]
    assert near_miss(0.06, 0.5, 0.1, 0.0, 0.6) and not near_miss(0.059, 0.5, 0.1, 0.0, 0.6)
    assert not near_miss(0.06, 0.5, 0.0, 0.0, 0.6)  # no margin measured: nothing to miss narrowly


def test_the_closest_sections_hold_words_close_in_meaning_when_their_own_fall_short():
    from nodes.cap import NEAR_MISS_HELD, closest_hold

    closest = [{"heading_path": ["Lists"], "text": "Public lists for a subscription form, no token needed."}]
    question = "How does my signup page get the lists?"
    literal = closest_hold(question, closest, None)  # "lists" of "signup", "page", "lists"
    assert literal == pytest.approx(1 / 3) and literal >= NEAR_MISS_HELD
    assert closest_hold(question, closest, None, embed=lambda texts: 1 / 0) == literal  # enough: nothing embedded
    short = "How does my signup widget fetch the lists?"  # "lists" of four words
    assert closest_hold(short, closest, None) == pytest.approx(0.25) and 0.25 < NEAR_MISS_HELD

    def embed(texts):  # "signup" means "subscription"; nothing else is near anything
        return [[1.0, 0.0] if t in ("signup", "subscription") else [0.0, 1.0] if t == "lists" else [0.0, 0.0]
                for t in texts]

    assert closest_hold(short, closest, None, embed) == pytest.approx(0.5)


def test_hybrid_search_gives_bm25_a_condensed_follow_ups_own_words_only():
    resources = make_resources(RECORDS, hybrid_alpha=0.6)
    vector = resources.embeddings.embed_query("export invoices")
    config = config_for(resources, k=3)
    update = search({"question": "How do I export invoices?", "intent": "conceptual", "query_vector": vector}, config)
    assert resources.store.calls == [("hybrid", "How do I export invoices?", 3, 0.6, None)]
    assert update["search_results"]
    resources.store.calls.clear()
    follow_up = {"question": "And as PDF?", "standalone_question": "And as PDF? — about: Export",
                 "condensed_by": "rules", "intent": "conceptual", "query_vector": vector}
    search(follow_up, config)
    assert resources.store.calls == [("hybrid", "And as PDF?", 3, 0.6, None)]  # the carried topic steers the vector
    resources.store.calls.clear()
    search(dict(follow_up, standalone_question="Can I export invoices as PDF?", condensed_by="model"), config)
    assert resources.store.calls == [("hybrid", "Can I export invoices as PDF?", 3, 0.6, None)]
    vector_only = make_resources(RECORDS, hybrid_alpha=None)  # unset in the settings: the vector alone
    search(follow_up, config_for(vector_only, k=3))
    assert vector_only.store.calls == [("near_vector", 3, None)]
