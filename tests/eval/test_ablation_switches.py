"""The per-request switches `fieldguide eval --ablate` uses are honoured by the nodes."""
from __future__ import annotations

from types import SimpleNamespace

from fieldguide.evaluation.runner import QUERY_ABLATIONS, subset_questions
from fieldguide.settings import Settings
from graph.options import QueryOptions
from nodes.reassemble import reassemble
from nodes.route import route


def config(**options):
    return {"configurable": {"resources": SimpleNamespace(settings=Settings()), **options}}


def part(index: int, count: int = 3) -> dict:
    return {"chunk_id": f"g#{index}", "group_id": "g", "part_index": index, "part_count": count, "source": "a.md",
            "heading_path": ["A"], "chunk_type": "section", "content_kind": "prose", "text": f"part {index}",
            "similarity": 0.8, "rerank_score": 1.0, "images": [], "token_count": 5}


def test_routing_switch():
    question = {"question": "Where is the Save button on the settings screen?"}
    assert route(question, config())["intent"] == "screen"
    routed_off = route(question, config(routing=False))
    assert routed_off["intent"] == "conceptual" and routed_off["intent_reason"] == "routing off"


def test_reassembly_switch_keeps_the_capped_chunks_alone():
    store = SimpleNamespace(reassembly_parts=lambda group_ids, sections: (
        {group_id: [part(1), part(2), part(3)] for group_id in group_ids}, [None] * len(sections)),
        page_records=lambda source, under=(): [part(1), part(2), part(3)])
    resources = SimpleNamespace(settings=Settings(), store=store)
    state = {"cap_results": [part(2)], "search_results": [part(2)]}
    on = reassemble(state, {"configurable": {"resources": resources, "parent_intro": False}})
    off = reassemble(state, {"configurable": {"resources": resources, "reassembly": False}})
    assert [b["part_index"] for b in on["context"]] == [1, 2, 3]
    assert [b["part_index"] for b in off["context"]] == [2]


def test_every_query_ablation_is_a_known_option():
    for name, overrides in QUERY_ABLATIONS.items():
        options = QueryOptions.from_config({"configurable": overrides}, Settings())
        assert options != QueryOptions.from_config({"configurable": {}}, Settings()), name


def test_subset_takes_intents_in_turn():
    questions = [{"id": str(i), "intent": "screen" if i < 5 else "conceptual"} for i in range(10)]
    picked = subset_questions(questions, 4)
    assert [q["id"] for q in picked] == ["0", "1", "5", "6"]
