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
    assert ("reassembly_parts", ["g"], []) in resources.store.calls


def test_unsplit_chunks_are_not_fetched_again():
    single = record("s", "alone")
    resources = make_resources([single])
    reassemble({"cap_results": [hit(single)]}, config_for(resources))
    assert [call for call in resources.store.calls if call[0] == "reassembly_parts"] == []


def option_page():
    """A reference page: an option group and its options, each a few lines, and a neighbour."""
    return [record("opts", "Options for the password policy.", source="policy.md", heading_path=("Options",),
                   token_count=5),
            record("zx", "Strength metering.", source="policy.md", heading_path=("Options", "zxcvbn"),
                   token_count=5),
            record("en", "Only one policy applies at a time.", source="policy.md",
                   heading_path=("Options", "zxcvbn", "enabled"), token_count=8),
            record("ms", "The minimum score.", source="policy.md", heading_path=("Options", "zxcvbn", "min_score"),
                   token_count=6),
            record("std", "The standard policy.", source="policy.md", heading_path=("Options", "standard"),
                   token_count=5),
            record("other", "Elsewhere.", source="other.md", heading_path=("Options", "zxcvbn", "enabled"),
                   token_count=5)]


def test_the_best_hit_brings_its_own_subsections_from_its_page_in_order():
    records = option_page()
    resources = make_resources(records)
    best = hit(records[1])
    update = reassemble({"cap_results": [best, hit(records[4], rerank_score=0.5)], "search_results": [best]},
                        config_for(resources, context_token_budget=100, parent_intro=False))
    assert [(b["chunk_id"], b.get("context_role")) for b in update["context"]] == [
        ("zx", None), ("en", "subsection"), ("ms", "subsection"), ("std", None)]
    assert ("page_records", "policy.md") in resources.store.calls
    # only what the budget leaves, up to the first that does not fit: never a later one past a hole
    update = reassemble({"cap_results": [best], "search_results": [best]},
                        config_for(resources, context_token_budget=12, section_token_budget=0, parent_intro=False))
    assert [b["chunk_id"] for b in update["context"]] == ["zx"]
    update = reassemble({"cap_results": [best], "search_results": [best]},
                        config_for(resources, context_token_budget=13, section_token_budget=0, parent_intro=False))
    assert [b["chunk_id"] for b in update["context"]] == ["zx", "en"]
    # the section budget goes on from where the context budget stopped, in the page's order
    update = reassemble({"cap_results": [best], "search_results": [best]},
                        config_for(resources, context_token_budget=12, section_token_budget=18, parent_intro=False))
    assert [(b["chunk_id"], b.get("context_role")) for b in update["context"]] == [
        ("zx", None), ("en", "subsection")]
    update = reassemble({"cap_results": [best], "search_results": [best]},
                        config_for(resources, context_token_budget=12, section_token_budget=19, parent_intro=False))
    assert [b["chunk_id"] for b in update["context"]] == ["zx", "en", "ms"]
    # switched off: the hit alone
    update = reassemble({"cap_results": [best], "search_results": [best]},
                        config_for(resources, context_token_budget=100, parent_intro=False, own_subsections=False))
    assert [b["chunk_id"] for b in update["context"]] == ["zx"]


def migration_page():
    """A page whose section is a run of steps, each a subsection, and a neighbour page."""
    steps = [("cons", "Considerations"), ("s1", "Step 1"), ("s2", "Step 2"), ("s3", "Step 3")]
    return ([record("mig", "How the move works.", source="migrate.md", heading_path=("Migrating",), token_count=5)]
            + [record(cid, f"What {title} says.", source="migrate.md", heading_path=("Migrating", title),
                      token_count=5) for cid, title in steps]
            + [record("far", "Elsewhere.", source="other.md", heading_path=("Other",), token_count=5)])


def test_a_parent_half_in_the_context_brings_its_other_subsections_from_the_section_budget():
    records = migration_page()
    page_of = make_resources(records).store.page_records
    by_id = {r["chunk_id"]: r for r in records}
    two_of_four = [hit(by_id["s2"]), hit(by_id["s1"], rerank_score=0.7)]
    context, _ = assemble(two_of_four, [], 10, parts_of(records), section_budget=100, page_of=page_of)
    assert [(b["chunk_id"], b.get("context_role")) for b in context] == [
        ("s2", None), ("s1", None), ("cons", "subsection"), ("s3", "subsection")]
    # the context budget alone never reaches past it
    context, _ = assemble(two_of_four, [], 10, parts_of(records), section_budget=10, page_of=page_of)
    assert [b["chunk_id"] for b in context] == ["s2", "s1"]
    # one subsection of four is a hit on a step, not on the procedure
    one_of_four = [hit(by_id["s2"]), hit(by_id["far"], rerank_score=0.7)]
    context, _ = assemble(one_of_four, [], 10, parts_of(records), section_budget=100, page_of=page_of)
    assert [b["chunk_id"] for b in context] == ["s2", "far"]


def test_a_pages_intro_brings_no_page_along():
    intro = record("intro", "What the page is about.", source="policy.md", heading_path=(), token_count=5)
    resources = make_resources([intro] + option_page())
    update = reassemble({"cap_results": [hit(intro)], "search_results": [hit(intro)]},
                        config_for(resources, context_token_budget=100, parent_intro=False))
    assert [b["chunk_id"] for b in update["context"]] == ["intro"]
    assert ("page_records", "policy.md") not in resources.store.calls


def test_a_subsection_already_in_the_context_is_not_added_twice():
    records = option_page()
    best, child = hit(records[1]), hit(records[3], rerank_score=0.7)
    context, _ = assemble([best, child], [], 100, parts_of(records), page_of=make_resources(records).store.page_records)
    assert [b["chunk_id"] for b in context] == ["zx", "en", "ms"]  # the missing option before the kept one
    assert len({b["chunk_id"] for b in context}) == len(context)


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


def intro_fetcher(records):
    """Parent intros over in-memory records: each parent group id's first part (None if absent)."""
    def fetch(parent_group_ids):
        firsts = {r["group_id"]: r for r in records if r["part_index"] == 1}
        return [firsts.get(gid) for gid in parent_group_ids]
    return fetch


def family():
    parent = record("p", "Open Settings and click Show advanced settings.", heading_path=("Settings",),
                    token_count=10)
    child = record("c", "The budget ID is shown here.", heading_path=("Settings", "Budget ID"),
                   chunk_type="subsection", token_count=10, parent_group_id="p")
    return parent, dict(child, line_start=5, line_end=8)


def test_a_subsection_hit_gets_its_parent_intro_right_before_it_labelled():
    parent, child = family()
    other = record("o", "Other topic.", source="other.md", token_count=10)
    context, gaps = assemble([hit(other), hit(child)], [], 30, parts_of([]), intro_fetcher([parent, child, other]))
    assert [(b["chunk_id"], b.get("context_role")) for b in context] == [
        ("o", None), ("p", "parent_intro"), ("c", None)]
    assert context[1]["rerank_score"] is None and gaps == []


def test_no_parent_intro_when_it_does_not_fit_or_is_switched_off_or_already_there():
    parent, child = family()
    fetch = intro_fetcher([parent, child])
    assert [b["chunk_id"] for b in assemble([hit(child)], [], 15, parts_of([]), fetch)[0]] == ["c"]
    assert [b["chunk_id"] for b in assemble([hit(child)], [], 100, parts_of([]))[0]] == ["c"]
    both = assemble([hit(child), hit(parent)], [], 100, parts_of([]), fetch)[0]
    assert [b["chunk_id"] for b in both] == ["c", "p"] and not any(b.get("context_role") for b in both)


def test_parent_intros_go_shortest_first_within_the_budget():
    long_parent = record("lp", "long " * 20, source="a.md", heading_path=("A",), token_count=20)
    long_child = dict(record("lc", "a child", source="a.md", heading_path=("A", "Sub"),
                             chunk_type="subsection", token_count=10, parent_group_id="lp"), line_start=30)
    short_parent = record("sp", "short", source="b.md", heading_path=("B",), token_count=5)
    short_child = dict(record("sc", "b child", source="b.md", heading_path=("B", "Sub"),
                              chunk_type="subsection", token_count=10, parent_group_id="sp"), line_start=30)
    fetch = intro_fetcher([long_parent, long_child, short_parent, short_child])
    context, _ = assemble([hit(long_child), hit(short_child)], [], 40, parts_of([]), fetch)
    assert [b["chunk_id"] for b in context] == ["lc", "sp", "sc"]


def test_same_named_parents_in_one_file_each_give_their_own_child_its_intro():
    first = dict(record("p1", "first", heading_path=("Setup",), token_count=5), line_start=1)
    second = dict(record("p2", "second", heading_path=("Setup",), token_count=5), line_start=20)
    early = dict(record("c1", "early child", heading_path=("Setup", "Step"), chunk_type="subsection",
                        token_count=5, parent_group_id="p1"), line_start=5)
    late = dict(record("c2", "late child", heading_path=("Setup", "Step"), chunk_type="subsection",
                       token_count=5, parent_group_id="p2"), line_start=25)
    fetch = intro_fetcher([first, second, early, late])
    assert [b["chunk_id"] for b in assemble([hit(late)], [], 100, parts_of([]), fetch)[0]] == ["p2", "c2"]
    assert [b["chunk_id"] for b in assemble([hit(early)], [], 100, parts_of([]), fetch)[0]] == ["p1", "c1"]
    # a record from an index written before parents were named: no intro, never a guess
    unnamed = dict(late, parent_group_id="")
    assert [b["chunk_id"] for b in assemble([hit(unnamed)], [], 100, parts_of([]), fetch)[0]] == ["c2"]


def test_the_node_fetches_parent_intros_only_when_asked():
    parent, child = family()
    resources = make_resources([parent, child])
    update = reassemble({"cap_results": [hit(child)]}, config_for(resources, parent_intro=True, parent_body=False))
    assert [b["chunk_id"] for b in update["context"]] == ["p", "c"]
    assert ("reassembly_parts", [], ["p"]) in resources.store.calls
    resources = make_resources([parent, child])
    update = reassemble({"cap_results": [hit(child)]}, config_for(resources, parent_intro=False, parent_body=False))
    assert [b["chunk_id"] for b in update["context"]] == ["c"]
    assert [call for call in resources.store.calls if call[0] == "reassembly_parts"] == []


def split_parent():
    """A parent whose own text (a table of locations) runs over three parts, and two of its children."""
    parent = [dict(r, heading_path=("Storage",), line_start=n, line_end=n + 1)
              for n, r in enumerate(split_section("par", ["Locations:", "| local | s3 |", "| gcs | azure |"],
                                                  token_count=10), start=1)]
    child = dict(record("cl", "Cloudinary needs a key.", heading_path=("Storage", "Cloudinary"),
                        chunk_type="subsection", token_count=10, parent_group_id="par"), line_start=20)
    sibling = dict(record("sb", "Supabase needs a bucket.", heading_path=("Storage", "Supabase"),
                          chunk_type="subsection", token_count=10, parent_group_id="par"), line_start=30)
    return parent, child, sibling


def test_the_best_hits_parent_brings_its_whole_own_text_from_the_section_budget():
    parent, child, sibling = split_parent()
    other = record("o", "Elsewhere.", source="other.md", token_count=10)
    records = parent + [child, sibling, other]
    hits = [hit(child), hit(other, rerank_score=0.5)]
    # the context budget buys the hit, the other hit and the intro; the section budget the rest, in order
    context, gaps = assemble(hits, [], 30, parts_of(records), intro_fetcher(records), section_budget=50,
                             parent_parts=parent)
    assert [(b["chunk_id"], b.get("context_role")) for b in context] == [
        ("par-p1", "parent_intro"), ("par-p2", "parent_intro"), ("par-p3", "parent_intro"), ("cl", None), ("o", None)]
    assert gaps == []
    # up to the first part that does not fit
    context, gaps = assemble(hits, [], 30, parts_of(records), intro_fetcher(records), section_budget=45,
                             parent_parts=parent)
    assert [b["chunk_id"] for b in context] == ["par-p1", "par-p2", "cl", "o"]
    assert gaps == []  # a parent's text is context for its child, never a split section quoted in part
    # the intro did not fit the context budget: the parent's text starts from its first part
    context, _ = assemble(hits, [], 20, parts_of(records), intro_fetcher(records), section_budget=50,
                          parent_parts=parent)
    assert [b["chunk_id"] for b in context] == ["par-p1", "par-p2", "par-p3", "cl", "o"]
    # no section budget beyond the context budget: the intro alone
    context, _ = assemble(hits, [], 30, parts_of(records), intro_fetcher(records), section_budget=0,
                          parent_parts=parent)
    assert [b["chunk_id"] for b in context] == ["par-p1", "cl", "o"]


def test_only_the_best_hits_parent_and_never_a_parent_already_in_the_context():
    parent, child, sibling = split_parent()
    other = record("o", "Elsewhere.", source="other.md", token_count=10)
    records = parent + [child, sibling, other]
    # the best hit is another page's: the parent's text is not what the question found
    context, _ = assemble([hit(other), hit(child, rerank_score=0.5)], [], 30, parts_of(records),
                          intro_fetcher(records), section_budget=100, parent_parts=parent)
    assert [b["chunk_id"] for b in context] == ["o", "par-p1", "cl"]
    # the parent is a hit itself: its parts come as its own section, once
    context, _ = assemble([hit(child), hit(parent[1], rerank_score=0.5)], [], 60, parts_of(records),
                          intro_fetcher(records), section_budget=100, parent_parts=parent)
    assert [b["chunk_id"] for b in context].count("par-p2") == 1


def test_the_node_fetches_the_best_hits_parent_whole_only_when_asked():
    parent, child, sibling = split_parent()
    resources = make_resources(parent + [child, sibling])
    state = {"cap_results": [hit(child)], "search_results": [hit(child)]}
    update = reassemble(state, config_for(resources, context_token_budget=20, section_token_budget=100,
                                          own_subsections=False))
    assert [b["chunk_id"] for b in update["context"]] == ["par-p1", "par-p2", "par-p3", "cl"]
    assert ("reassembly_parts", ["par"], ["par"]) in resources.store.calls
    resources = make_resources(parent + [child, sibling])
    update = reassemble(state, config_for(resources, context_token_budget=20, section_token_budget=100,
                                          own_subsections=False, parent_body=False))
    assert [b["chunk_id"] for b in update["context"]] == ["par-p1", "cl"]
    assert ("reassembly_parts", [], ["par"]) in resources.store.calls


def test_subsections_below_the_cut_come_after_their_section_with_the_budget_left():
    from nodes.cap import subsections_below_cut

    section = record("cast", "The app can cast to a TV.", heading_path=("Casting",), token_count=10)
    enable = record("enable", "Turn it on in Settings > Features > Cast.", heading_path=("Casting", "Enable"),
                    chunk_type="subsection", token_count=10)
    elsewhere = record("other", "Other page.", source="other.md", heading_path=("Casting", "Enable"),
                       token_count=10)
    unrelated = record("u", "Unrelated.", heading_path=("Sharing",), token_count=10)
    kept = [hit(section, rerank_score=0.45), hit(unrelated, rerank_score=0.44)]
    ranked = kept + [hit(elsewhere, rerank_score=0.40), hit(enable, rerank_score=0.39)]
    below = subsections_below_cut(kept, ranked, limit=4)
    assert [c["chunk_id"] for c in below] == ["enable"] and below[0]["below_cut"]  # same file only
    assert subsections_below_cut(kept, ranked, limit=0) == []

    context, _ = assemble(kept + below, [], 30, parts_of([]))
    assert [(b["chunk_id"], b.get("context_role")) for b in context] == [
        ("cast", None), ("enable", "subsection"), ("u", None)]
    # it only takes what the kept chunks leave: with no room left it is not there
    assert [b["chunk_id"] for b in assemble(kept + below, [], 20, parts_of([]))[0]] == ["cast", "u"]


def test_a_subsection_below_the_cut_never_displaces_a_sibling_part_or_a_parent_intro():
    from nodes.cap import subsections_below_cut

    parts = split_section("g", ["first part", "second part"], token_count=10, heading_path=("Guide",))
    sub = record("sub", "details", heading_path=("Guide", "Details"), chunk_type="subsection", token_count=10)
    kept = [hit(parts[0])]
    below = subsections_below_cut(kept, kept + [hit(sub, rerank_score=0.3)], limit=2)
    context, _ = assemble(kept + below, [], 20, parts_of(parts))
    assert [b["chunk_id"] for b in context] == ["g-p1", "g-p2"]  # the sibling part first


def test_a_dominant_split_section_fills_the_section_budget_with_its_other_parts():
    """Four parts of twelve leave a long reference section's facts out: when one split section holds
    most of the kept hits, its remaining parts come in beyond the context budget, up to the section
    budget, after everything the context budget bought."""
    long = split_section("long", [f"part {i}" for i in range(1, 9)], token_count=10)
    other = record("other", "elsewhere", token_count=10)
    hits = [hit(long[4], rerank_score=0.9), hit(long[5], rerank_score=0.85), hit(other, rerank_score=0.8)]
    context, gaps = assemble(hits, [], 40, parts_of(long + [other]))
    assert [b["chunk_id"] for b in context] == ["long-p4", "long-p5", "long-p6", "other"]  # the budget alone
    context, gaps = assemble(hits, [], 40, parts_of(long + [other]), section_budget=70)
    # 30 more tokens: the three parts nearest the kept ones (3 and 7, then 2)
    assert [b["chunk_id"] for b in context] == [f"long-p{i}" for i in range(2, 8)] + ["other"]
    assert gaps == [{"group_id": "long", "missing_parts": [1, 8], "part_count": 8}]
    context, gaps = assemble(hits, [], 40, parts_of(long + [other]), section_budget=1000)
    assert [b["chunk_id"] for b in context] == [f"long-p{i}" for i in range(1, 9)] + ["other"] and gaps == []


def test_no_section_dominates_when_hits_are_spread_or_the_section_is_not_split():
    from nodes.reassemble import dominant_section

    a = split_section("a", ["a1", "a2", "a3"], token_count=10)
    b = split_section("b", ["b1", "b2", "b3"], token_count=10)
    single = record("s", "alone", token_count=10)
    assert dominant_section([hit(a[0]), hit(a[1]), hit(b[0])]) == "a"
    assert dominant_section([hit(a[0])]) == "a"  # the only section kept
    assert dominant_section([hit(a[0]), hit(b[0])]) is None  # a tie: nothing stands out
    assert dominant_section([hit(a[0]), hit(b[0])], whole={"a"}) == "b"  # a complete section needs no budget
    assert dominant_section([hit(a[0]), hit(a[1]), hit(b[0]), hit(b[1])], whole={"a"}) == "b"  # still half
    assert dominant_section([hit(a[0]), hit(b[0]), hit(single)]) is None  # under half
    assert dominant_section([hit(single), hit(a[0])]) == "a"  # an unsplit section is complete already
    assert dominant_section([hit(single), hit(record("t", "too", token_count=10)), hit(a[0])]) is None
    assert dominant_section([hit(single)]) is None  # nothing split: nothing to complete
    # a subsection below the cut is no kept hit
    assert dominant_section([hit(a[0]), {**hit(b[0]), "below_cut": True}, {**hit(b[1]), "below_cut": True}]) == "a"
    # a tie: no section dominates, so only the best hit's own section comes whole (pass 11)
    context, _ = assemble([hit(a[0]), hit(b[0])], [], 20, parts_of(a + b), section_budget=1000)
    assert [blk["chunk_id"] for blk in context] == ["a-p1", "a-p2", "a-p3", "b-p1"]


def test_the_node_passes_the_section_budget_and_zero_switches_it_off():
    records = split_section("g", [f"part {i}" for i in range(1, 7)], token_count=10)
    resources = make_resources(records)
    state = {"cap_results": [hit(records[2]), hit(records[3])], "search_results": []}
    update = reassemble(state, config_for(resources, context_token_budget=30, section_token_budget=60))
    assert [b["part_index"] for b in update["context"]] == [1, 2, 3, 4, 5, 6]
    update = reassemble(state, config_for(resources, context_token_budget=30, section_token_budget=0))
    assert [b["part_index"] for b in update["context"]] == [2, 3, 4]


def test_the_holes_between_two_kept_parts_are_filled_from_the_section_budget():
    records = split_section("g", [f"part {i}" for i in range(1, 6)], token_count=10)
    others = [record(f"o{n}", "elsewhere", source=f"other{n}.md", token_count=10) for n in range(3)]
    # the section holds two of five kept hits: no dominant section, so only its holes are filled
    hits = [hit(records[0])] + [hit(o, rerank_score=0.7) for o in others] + [hit(records[4], rerank_score=0.6)]
    parts = parts_of(records + others)
    context, gaps = assemble(hits, [], 50, parts, section_budget=80)
    assert [(b["group_id"], b["part_index"]) for b in context] == [
        ("g", 1), ("g", 2), ("g", 3), ("g", 4), ("g", 5), ("o0", 1), ("o1", 1), ("o2", 1)]
    assert gaps == []
    # no room beyond the context budget: the hole stays, and is recorded
    context, gaps = assemble(hits, [], 50, parts, section_budget=0)
    assert [b["part_index"] for b in context if b["group_id"] == "g"] == [1, 5]
    assert gaps == [{"group_id": "g", "missing_parts": [2, 3, 4], "part_count": 5}]
    # filled in order up to the first part that does not fit
    context, _ = assemble(hits, [], 50, parts, section_budget=65)
    assert [b["part_index"] for b in context if b["group_id"] == "g"] == [1, 2, 5]


def test_a_section_half_in_the_context_comes_whole_from_the_section_budget():
    """The hit and the small last part leave a hole that fills in; the section is then mostly in,
    and its opening (where the advice sits, before the YAML the question found) comes too."""
    section = split_section("values", [f"part {i}" for i in range(1, 10)], token_count=20)
    section[8]["token_count"] = 5  # the short tail that fits the context budget
    others = [record(f"o{n}", "elsewhere", source=f"other{n}.md", token_count=20) for n in range(3)]
    hits = [hit(others[0], rerank_score=0.9), hit(section[3], rerank_score=0.8)] + [
        hit(o, rerank_score=0.7) for o in others[1:]]
    parts = parts_of(section + others)
    context, gaps = assemble(hits, [], 85, parts, section_budget=0)
    assert [b["part_index"] for b in context if b["group_id"] == "values"] == [4, 9]
    context, gaps = assemble(hits, [], 85, parts, section_budget=1000)
    assert [b["part_index"] for b in context if b["group_id"] == "values"] == list(range(1, 10))
    assert gaps == []
    # under half in (the tail no longer fits the context budget): the hit, and the opening up to it
    context, _ = assemble(hits, [], 85, parts_of(section[:8] + [dict(section[8], token_count=200)] + others),
                          section_budget=1000)
    assert [b["part_index"] for b in context if b["group_id"] == "values"] == [1, 2, 3, 4]


def test_a_kept_section_without_its_opening_gets_it_from_the_section_budget():
    """Parts 2 to 4 of a seven-part procedure start after its first step: the opening comes in
    beyond the context budget, before the parts after the kept ones, and only while it fits."""
    steps = split_section("steps", [f"step {i}" for i in range(1, 8)], token_count=20)
    others = [record(f"o{n}", "elsewhere", source=f"other{n}.md", token_count=20) for n in range(2)]
    hits = [hit(others[0], rerank_score=0.9), hit(steps[2], rerank_score=0.8), hit(others[1], rerank_score=0.7)]
    parts = parts_of(steps + others)
    context, gaps = assemble(hits, [], 100, parts, section_budget=0)  # the context budget alone: 3 and 4 join
    assert [b["part_index"] for b in context if b["group_id"] == "steps"] == [2, 3, 4]
    context, gaps = assemble(hits, [], 100, parts, section_budget=120)
    assert [b["part_index"] for b in context if b["group_id"] == "steps"] == [1, 2, 3, 4]
    assert gaps == [{"group_id": "steps", "missing_parts": [5, 6, 7], "part_count": 7}]
    context, _ = assemble(hits, [], 100, parts, section_budget=119)  # the opening does not fit: nothing more
    assert [b["part_index"] for b in context if b["group_id"] == "steps"] == [2, 3, 4]
    # a section that has its opening gains nothing from this pass
    hits = [hit(others[0], rerank_score=0.9), hit(steps[0], rerank_score=0.8), hit(others[1], rerank_score=0.7)]
    context, _ = assemble(hits, [], 60, parts, section_budget=1000)
    assert [b["part_index"] for b in context if b["group_id"] == "steps"] == [1]


def test_the_section_budget_reads_on_through_the_best_hits_subsections_and_lays_none_out_twice():
    """The context budget stops the best hit's own subsections at the first that does not fit; the
    section budget reads on from there. A subsection that is itself a kept section (here "Steps",
    found by its part 2) is completed where it stands, not repeated after the best hit."""
    top = record("top", "The layout.", source="layouts.md", heading_path=("Board",), token_count=10)
    steps = split_section("steps", ["one", "two", "three"], source="layouts.md",
                          heading_path=("Board", "Steps"), token_count=10)
    area = record("area", "The page area.", source="layouts.md", heading_path=("Board", "Page Area"), token_count=10)
    other = record("other", "Elsewhere.", source="other.md", token_count=10)
    page = [top] + steps + [area]
    hits = [hit(top, rerank_score=0.9), hit(steps[1], rerank_score=0.8), hit(other, rerank_score=0.7)]

    def page_of(source, under=()):
        return [dict(r) for r in page if r["source"] == source]

    parts = parts_of(page + [other])
    context, _ = assemble(hits, [], 30, parts, section_budget=0, page_of=page_of)
    assert [b["chunk_id"] for b in context] == ["top", "steps-p2", "other"]
    context, gaps = assemble(hits, [], 30, parts, section_budget=60, page_of=page_of)
    assert [(b["chunk_id"], b.get("context_role")) for b in context] == [
        ("top", None), ("area", "subsection"), ("steps-p1", None), ("steps-p2", None), ("steps-p3", None),
        ("other", None)]
    assert gaps == []


def test_the_best_hits_split_section_comes_whole_from_the_section_budget():
    """A messenger page's first part was the best hit; a two-part section ranked below it spent the
    context budget, and the payload in the best section's later parts stayed out although no
    section dominated and it was not half in."""
    best = split_section("best", ["what it is", "the address", "the payload"], token_count=20)
    pair = split_section("pair", ["list one", "list two"], token_count=20)
    other = record("other", "Elsewhere.", source="other.md", token_count=20)
    hits = [hit(best[0], rerank_score=0.9), hit(pair[1], rerank_score=0.8), hit(pair[0], rerank_score=0.7),
            hit(other, rerank_score=0.6)]
    parts = parts_of(best + pair + [other])
    context, gaps = assemble(hits, [], 80, parts, section_budget=0)
    assert [b["chunk_id"] for b in context] == ["best-p1", "pair-p1", "pair-p2", "other"]
    assert gaps == [{"group_id": "best", "missing_parts": [2, 3], "part_count": 3}]
    context, gaps = assemble(hits, [], 80, parts, section_budget=120)
    assert [b["chunk_id"] for b in context] == ["best-p1", "best-p2", "best-p3", "pair-p1", "pair-p2", "other"]
    assert gaps == []
    # the best hit's section only: a section ranked below it that is missing parts stays as it is
    hits = [hit(other, rerank_score=0.9), hit(best[0], rerank_score=0.8), hit(pair[0], rerank_score=0.7),
            hit(pair[1], rerank_score=0.6)]
    context, _ = assemble(hits, [], 80, parts, section_budget=120)
    assert [b["chunk_id"] for b in context if b["group_id"] == "best"] == ["best-p1"]


def test_a_split_subsection_below_the_cut_keeps_the_parts_a_later_pass_reads_from_the_page():
    """A subsection below the cut comes as its hit alone (its other parts are not fetched); when the
    best hit's subsections are read on from the page, its next part joins it in place instead of
    being counted and lost."""
    top = record("top", "The board.", source="layouts.md", heading_path=("Board",), token_count=10)
    area = split_section("area", ["where the cards go", "how to drag them"], source="layouts.md",
                         heading_path=("Board", "Area"), token_count=10)
    page = [top] + area

    def page_of(source, under=()):
        return [dict(r) for r in page if r["source"] == source]

    def parts(gid):
        return []  # as the node's fetcher answers for a group it did not fetch

    for below_hit in (True, False):  # laid out as a subsection below the cut, or as a kept hit's section
        hits = [hit(top, rerank_score=0.9), {**hit(area[0], rerank_score=0.5), "below_cut": below_hit}]
        context, gaps = assemble(hits, [], 20, parts if below_hit else parts_of(page), section_budget=40,
                                 page_of=page_of)
        assert [b["chunk_id"] for b in context] == ["top", "area-p1", "area-p2"]
        assert gaps == []
