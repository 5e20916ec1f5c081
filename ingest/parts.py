"""Which parts of a split section a run of context blocks leaves out.

A section too long for the encoder is stored as parts ("part 2 of 3", `part_index` of
`part_count`, one `group_id`). Reassembly keeps what fits and records the rest as the turn's
`gaps`; the prompt says where parts are left out between the excerpts the model reads. Both
read it from the blocks with these functions, so the state and the prompt cannot disagree.
A parent intro block (`context_role: "parent_intro"`) stands for its parent's own text above
the subsection the question found (its first part, or its first parts in order) and is never
counted as a part of a split section.
"""
from __future__ import annotations


def _split_part(block: dict | None) -> bool:
    return (block is not None and int(block.get("part_count") or 1) > 1
            and block.get("context_role") != "parent_intro")


def left_out_before(previous: dict | None, block: dict) -> list[int]:
    """Part numbers of `block`'s section missing just before it: after `previous` when that is an
    earlier part of the same section, else from the section's first part."""
    if not _split_part(block):
        return []
    same = _split_part(previous) and previous.get("group_id") == block.get("group_id")
    start = int(previous["part_index"]) + 1 if same else 1
    return list(range(start, int(block["part_index"])))


def left_out_after(block: dict, following: dict | None) -> list[int]:
    """Part numbers missing after `block` to the end of its section; none when `following`
    continues the section."""
    if not _split_part(block):
        return []
    if _split_part(following) and following.get("group_id") == block.get("group_id"):
        return []
    return list(range(int(block["part_index"]) + 1, int(block["part_count"]) + 1))


def section_gaps(blocks: list[dict]) -> list[dict]:
    """{"group_id", "missing_parts", "part_count"} for every split section of `blocks` with parts
    left out, in the order the sections first appear."""
    present: dict[str, set[int]] = {}
    left_out: dict[str, set[int]] = {}
    counts: dict[str, int] = {}
    for index, block in enumerate(blocks):
        if not _split_part(block):
            continue
        group = block["group_id"]
        previous = blocks[index - 1] if index else None
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        present.setdefault(group, set()).add(int(block["part_index"]))
        left_out.setdefault(group, set()).update(left_out_before(previous, block), left_out_after(block, following))
        counts[group] = int(block["part_count"])
    gaps = []
    for group, parts in left_out.items():
        missing = sorted(parts - present[group])  # a section out of order is not missing what it shows
        if missing:
            gaps.append({"group_id": group, "missing_parts": missing, "part_count": counts[group]})
    return gaps
