from fakes import config_for, make_resources, record, split_section
from nodes.reassemble import assemble, reassemble, trim_overlap


def hit(r, similarity=0.6, rerank_score=0.8):
    return dict(r, similarity=similarity, rerank_score=rerank_score)


def parts_of(records):
    return lambda gid: [dict(r) for r in records if r["group_id"] == gid]


def test_a_split_section_comes_back_whole_and_in_order():
    records = split_section("g", ["one two", "three four", "five six"], token_count=10)
    resources = make_resources(records)
    update = reassemble({"cap_results": [hit(records[1])], "search_results": [hit(records[1])]},
                        config_for(resources, context_token_budget=100))
    assert [(b["chunk_id"], b["part_index"], b["part_count"]) for b in update["context"]] == [
        ("g-p1", 1, 3), ("g-p2", 2, 3), ("g-p3", 3, 3)]
    assert update["gaps"] == []
    # Only the hit was scored; its siblings say so with null scores.
    assert [b["rerank_score"] for b in update["context"]] == [None, 0.8, None]
    assert ("group_parts", "g") in resources.store.calls


def test_unsplit_chunks_are_not_fetched_again():
    single = record("s", "alone")
    resources = make_resources([single])
    reassemble({"cap_results": [hit(single)]}, config_for(resources))
    assert resources.store.calls == []


def test_over_budget_keeps_the_parts_nearest_the_hit_and_records_the_gap():
    records = split_section("g", [f"part {i}" for i in range(1, 6)], token_count=10)
    context, gaps = assemble([hit(records[3])], [], 30, parts_of(records))
    assert [b["part_index"] for b in context] == [3, 4, 5]
    assert gaps == [{"group_id": "g", "missing_parts": [1, 2], "part_count": 5}]


def test_ranked_chunks_are_kept_before_siblings_and_nothing_twice():
    first = split_section("a", ["a1", "a2", "a3"], token_count=10)
    second = record("b", "bee", token_count=10)
    hits = [hit(first[0], rerank_score=0.9), hit(second, rerank_score=0.8), hit(first[2], rerank_score=0.7)]
    context, gaps = assemble(hits, [], 30, parts_of(first + [second]))
    # Budget 30 = the three hits; a2 (a sibling) does not fit, so section a has a gap.
    assert [b["chunk_id"] for b in context] == ["a-p1", "a-p3", "b"]
    assert gaps == [{"group_id": "a", "missing_parts": [2], "part_count": 3}]


def test_the_first_hit_is_kept_even_when_alone_over_budget():
    big = record("big", "x " * 50, token_count=500)
    context, _ = assemble([hit(big)], [], 100, parts_of([big]))
    assert [b["chunk_id"] for b in context] == ["big"]


def test_overlap_between_neighbour_parts_is_trimmed():
    assert trim_overlap("alpha beta gamma delta epsilon zeta", "delta epsilon zeta eta theta") == "eta theta"
    assert trim_overlap("alpha beta", "gamma delta epsilon zeta") == "gamma delta epsilon zeta"
    records = split_section("g", ["intro words here and the shared tail text", "the shared tail text and more"],
                            token_count=5)
    context, _ = assemble([hit(records[0])], [], 100, parts_of(records))
    assert context[1]["text"] == "and more"
