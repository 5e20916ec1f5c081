"""weigh_intent: wording, example questions and the candidates' kinds, added up; no default intent."""
from __future__ import annotations

from fakes import config_for, make_resources, record
from nodes.route import route
from nodes.weigh_intent import (CANDIDATE_WEIGHT, EXAMPLE_WEIGHT, WORDING_WEIGHT, candidate_evidence,
                                example_evidence, weigh, weigh_intent)


def cand(kind, similarity):
    return {"chunk_id": f"{kind}{similarity}", "content_kind": kind, "similarity": similarity}


def test_no_evidence_either_way_is_ambiguous_not_a_default_intent():
    assert weigh(0.0, 0.0, 0.0)[0] == "ambiguous"


def test_each_kind_of_evidence_alone_can_decide():
    assert weigh(3.0, 0.0, 0.0)[0] == "screen" and weigh(-3.0, 0.0, 0.0)[0] == "conceptual"
    assert weigh(0.0, 0.1, 0.0)[0] == "screen" and weigh(0.0, -0.1, 0.0)[0] == "conceptual"
    assert weigh(0.0, 0.0, 0.4)[0] == "screen" and weigh(0.0, 0.0, -0.4)[0] == "conceptual"


def test_z_is_the_weighted_sum_and_confidence_its_probability():
    intent, confidence, z = weigh(1.0, 0.05, 0.2)
    assert abs(z - (WORDING_WEIGHT + EXAMPLE_WEIGHT * 0.05 + CANDIDATE_WEIGHT * 0.2)) < 1e-9
    assert intent == "screen" and 0.5 < confidence < 1.0


def test_candidate_evidence_is_the_screen_share_above_the_index_base_rate():
    candidates = [cand("screen", 0.8), cand("prose", 0.4), cand("screen", 0.4)]
    assert abs(candidate_evidence(candidates, 0.0) - 1.2 / 1.6) < 1e-9
    assert abs(candidate_evidence(candidates, 0.75) - 0.0) < 1e-9  # the docs are that screen-heavy anyway
    assert candidate_evidence([], 0.3) == 0.0


def test_example_evidence_compares_the_two_means():
    assert example_evidence([1.0, 0.0], ([1.0, 0.0], [0.0, 1.0])) == 1.0
    assert example_evidence([0.0, 2.0], ([1.0, 0.0], [0.0, 1.0])) == -1.0


RECORDS = [
    record("s1", "Click the Export button in the toolbar of the Reports screen.", content_kind="screen"),
    record("s2", "The Settings screen has a Theme field and a Save button.", content_kind="screen"),
    record("p1", "Taxes are calculated per line and rounded per invoice.", content_kind="prose"),
    record("p2", "Why budgets roll over: unspent money stays in its category.", content_kind="prose"),
]


def test_the_node_decides_and_keeps_every_term_in_the_reason():
    resources = make_resources(RECORDS)
    config = config_for(resources)
    state = {"question": "Where is the export button?", "timings_ms": {}}
    state.update(route(state, config))
    state["query_vector"] = resources.embeddings.embed_query(state["question"])
    state["search_results"] = resources.store.near_vector(state["query_vector"], 4)
    update = weigh_intent(state, config)
    assert update["intent"] == "screen"
    assert all(part in update["intent_reason"] for part in ("wording", "examples", "candidates", "asks where"))
    assert "weigh_intent" in update["timings_ms"]


def test_routing_off_leaves_routes_conceptual_alone():
    resources = make_resources(RECORDS)
    config = config_for(resources, routing=False)
    state = route({"question": "Where is the export button?"}, config)
    assert state["intent"] == "conceptual"
    assert "intent" not in weigh_intent({**state, "query_vector": [0.0] * 64}, config)


def test_z_adds_the_three_kinds_of_evidence_and_nothing_else():
    # no evidence either way: ambiguous, whatever share of screens the docs hold
    assert weigh(0.0, 0.0, 0.0)[0] == "ambiguous"
