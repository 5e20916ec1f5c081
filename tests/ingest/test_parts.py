"""Which parts of a split section a run of blocks leaves out: one reading for the turn's `gaps`
and the prompt's "left out" lines."""
from ingest.parts import left_out_after, left_out_before, section_gaps


def part(group, index, count, **extra):
    return {"group_id": group, "part_index": index, "part_count": count, **extra}


def test_parts_left_out_before_and_after_a_block():
    assert left_out_before(None, part("g", 3, 5)) == [1, 2]
    assert left_out_before(part("g", 1, 5), part("g", 4, 5)) == [2, 3]
    assert left_out_before(part("other", 4, 5), part("g", 2, 5)) == [1]  # another section: from the start
    assert left_out_after(part("g", 3, 5), None) == [4, 5]
    assert left_out_after(part("g", 3, 5), part("g", 5, 5)) == []  # the section goes on: said there
    assert left_out_after(part("g", 3, 5), part("h", 1, 1)) == [4, 5]


def test_whole_sections_and_parent_intros_leave_nothing_out():
    assert left_out_before(None, part("s", 1, 1)) == [] and left_out_after(part("s", 1, 1), None) == []
    intro = part("parent", 1, 4, context_role="parent_intro")  # the parent's first part, standing alone
    assert left_out_before(None, intro) == [] and left_out_after(intro, None) == []
    assert section_gaps([intro, part("child", 1, 1)]) == []


def test_section_gaps_gather_every_part_left_out_per_section_in_order():
    blocks = [part("b", 2, 4), part("b", 4, 4), part("s", 1, 1), part("a", 1, 3), part("a", 2, 3), part("a", 3, 3)]
    assert section_gaps(blocks) == [{"group_id": "b", "missing_parts": [1, 3], "part_count": 4}]


def test_section_gaps_of_blocks_out_of_section_order_count_what_is_shown_anywhere():
    # rank order (reassembly switched off): a section's parts need not be together
    blocks = [part("g", 3, 4), part("x", 1, 1), part("g", 1, 4)]
    assert section_gaps(blocks) == [{"group_id": "g", "missing_parts": [2, 4], "part_count": 4}]
    assert section_gaps([]) == []
