"""reassemble: put split sections back together, in order, within a token budget.

A chunk that is one part of a split section ("part 2 of 3") is never handed to the
generator alone: every sibling part is fetched and the parts are laid out in order. The
siblings and the parent intros (named at ingest by each chunk's `parent_group_id`) come from
the store in one round trip (`store.reassembly_parts`). Budget (`context_token_budget`, in the
embedding tokenizer's tokens as stored in `token_count`) is spent in five passes, and eight
more may go beyond it:

1. the ranked chunks themselves, best first (the first always, so there is context);
2. their siblings, section by section in rank order, nearest part to a hit first;
3. with `parent_intro` on, the introduction of a hit subsection's parent (the first part
   of the parent's own body), shortest first, each only if it
   fits. Steps often sit in that introduction ("open Settings, click Show advanced
   settings") while the hit is the child below it. The intro is placed right before
   the child's section and marked `context_role: "parent_intro"`;
4. subsections of kept sections that the cut left out (`below_cut`, `nodes.cap`), best first,
   each only if it fits, placed after their section and marked `context_role: "subsection"`;
5. with `own_subsections` on, the best hit's own subsections that the context lacks, read from
   its page (`store.page_records`) in the page's order up to the first that does not fit,
   placed after it and marked `context_role: "subsection"` (`own_subsections`): on a reference
   page each option is a subsection a few lines long (docs/TUNING.md, "Small sections");
6. when one split section dominates the kept chunks (`dominant_section`: it holds more of them
   than any other section still missing parts, and at least half), its remaining parts, nearest a kept one first,
   while the whole context stays within `section_token_budget`. A long reference section
   (an option table, a step list of a dozen parts) is what such a question is about, and
   four parts of twelve leave its facts out as often as not; the parts come after everything
   the context budget bought, so they never displace it (docs/TUNING.md, "A dominant section");
7. the parts between two kept parts of one section (`_fill_holes`), in order, within
   `section_token_budget` too: a quote of parts 1 and 5 says nothing of what joins them;
8. the other parts of every section that has at least half of its parts in the context by now,
   nearest a kept one first, within `section_token_budget`: a section's opening sits before the
   parts a question found (a Helm values section's one sentence of advice before eight parts of
   YAML), and a quote of parts 4 to 9 of nine leaves it out (docs/TUNING.md, "A dominant section");
9. with `parent_body` on, the rest of the best hit's parent's own text (`parent_body`), its parts in
   order after the intro, within `section_token_budget`, placed where the intro goes. A question
   about "Storage Locations" often finds one location's subsection best, while the list of
   locations sits in the parent's own table three parts long (docs/TUNING.md, "A parent's own text");
10. the rest of the best hit's own subsections (pass 5's list, on from where it stopped, up to the
   first that does not fit), within `section_token_budget`: a board layout's section found by its
   question keeps its "Page Area" subsection even when a three-part section ranked below it spent
   the context budget first;
11. the rest of the best hit's own section when it is split, nearest a kept part first, within
   `section_token_budget`: the section the question found best is the likeliest answer, and a
   messenger page's first part says what it is while the payload the question asks about sits
   in its second and third, which the other kept sections left no room for;
12. the first part of every kept split section that lacks it, with the parts between it and the
   kept ones, within `section_token_budget`, in rank order: a section's heading and first lines say
   what it is about and where its steps begin, and a quote of parts 2 to 4 of a backup procedure
   starts after "1. Stop the server" (docs/TUNING.md, "A dominant section");
13. with `own_subsections` on, the rest of the best hit's parent when the context already holds at
   least half of its subsections, two at least (`mostly_held_parent`), read from the page in its
   order up to the first that does not fit, within `section_token_budget`: a question about an
   upgrade procedure found three of its five steps, and the step that does the work was the one
   left out (docs/TUNING.md, "A parent mostly in the context").

Parts that do not fit are recorded in `gaps` (read from the blocks by `ingest.parts`, as the
prompt reads where to mark them). Parts
overlap their neighbour slightly at ingest; when two neighbours are both kept, the
repeated words are trimmed from the later one. Blocks come out grouped by section
(sections in rank order), parts in `part_index` order, no chunk twice.
"""
from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from graph.options import options_for
from graph.resources import resources_for
from graph.timing import timed
from ingest.dialects import reading_of
from ingest.parts import section_gaps

BLOCK_FIELDS = ("chunk_id", "group_id", "part_index", "part_count", "source", "heading_path",
                "chunk_type", "content_kind", "text", "similarity", "rerank_score", "images",
                "line_start", "line_end", "reading", "page_title")  # the lines: for citations (result lines leave them out)


def token_cost(chunk: dict) -> int:
    count = chunk.get("token_count")
    return int(count) if count else int(len(chunk.get("text", "").split()) * 1.3) + 1


def trim_overlap(previous: str, following: str, min_chars: int = 12) -> str:
    """`following` without the text it repeats from the end of `previous`."""
    probe = following[:min_chars]
    if len(probe) < min_chars:
        return following
    start = previous.find(probe, max(0, len(previous) - 4000))
    while start != -1:
        tail = previous[start:]
        if following.startswith(tail):
            return following[len(tail):].lstrip()
        start = previous.find(probe, start + 1)
    return following


def to_block(chunk: dict) -> dict:
    block = {name: chunk.get(name) for name in BLOCK_FIELDS}
    block["heading_path"] = list(block["heading_path"] or [])
    block["images"] = list(block["images"] or [])
    if chunk.get("label"):  # a labelled doc set's chunk says which set (the unnamed set's blocks stay as they were)
        block["label"] = chunk["label"]
    return block


@timed("reassemble")
def reassemble(state: dict, config: RunnableConfig = None) -> dict:
    options = options_for(config)
    hits = state.get("cap_results") or []
    if options.use_reassembly:
        split = list(dict.fromkeys(h["group_id"] for h in hits if int(h.get("part_count") or 1) > 1))
        wanted = intro_requests(hits) if options.parent_intro else []
        best_parent = parent_group_id(hits[0]) if hits and options.parent_body else ""
        whole = split + [best_parent] if best_parent and best_parent not in split else split
        parts, intros = {}, []
        if whole or wanted:  # one round trip for every split section, parent intro and the best hit's parent
            parts, intros = resources_for(config).store.reassembly_parts(whole, wanted)
        by_parent = dict(zip(wanted, intros))
        context, gaps = assemble(
            hits + (state.get("below_cut") or []), state.get("search_results") or [], options.context_token_budget,
            lambda group_id: parts.get(group_id, []),
            (lambda parent_ids: [by_parent.get(gid) for gid in parent_ids]) if wanted else None,
            options.section_token_budget, resources_for(config).store.page_records if options.own_subsections else None,
            parts.get(best_parent) if best_parent else None)
    else:  # switched off (ablation): the capped chunks alone, in rank order, no siblings
        context = [to_block(hit) for hit in hits]
        gaps = section_gaps(context)
    return {"context": context, "gaps": gaps}


def intro_requests(hits: list[dict]) -> list[str]:
    """The parent group ids of the hits (`parent_group_id`, named at ingest), in rank order, each
    once: the parent intros `assemble` may want, asked for before it knows which it will keep.
    A record from an index written before parents were named has none and gets no intro."""
    return list(dict.fromkeys(parent for parent in map(parent_group_id, hits) if parent))


def parent_group_id(record: dict) -> str:
    """The group id of the chunk holding a subsection's parent's own text; "" for a top section,
    a note, or a parent with no text of its own."""
    return "" if record.get("chunk_type") == "note" else record.get("parent_group_id") or ""


def dominant_section(hits: list[dict], whole: set[str] | frozenset = frozenset()) -> str | None:
    """The group id of the split section that holds more of the kept hits than any other section
    still missing parts, and at least half of all kept hits; None when no split section does.
    Sections in `whole` are already complete: they need no budget, so they do not compete for it
    (their hits still count among all kept hits). Subsections below the cut are no kept hits."""
    kept = [h for h in hits if not h.get("below_cut")]
    counts: dict[str, int] = {}
    for hit in kept:
        if hit["group_id"] not in whole and int(hit.get("part_count") or 1) > 1:
            counts[hit["group_id"]] = counts.get(hit["group_id"], 0) + 1
    if not counts:
        return None
    ranked = sorted(counts.values(), reverse=True)
    gid = max(counts, key=lambda g: counts[g])  # the first of the most held, in rank order
    if 2 * counts[gid] < len(kept) or (len(ranked) > 1 and ranked[1] == ranked[0]):
        return None
    return gid


def assemble(hits: list[dict], pool: list[dict], budget: int, group_parts,
             fetch_intros=None, section_budget: int = 0, page_of=None,
             parent_parts: list[dict] | None = None) -> tuple[list[dict], list[dict]]:
    """Pure reassembly: ranked hits + a part fetcher (+ a parent intro fetcher: parent group
    ids -> their first parts, None where missing; + a page reader: source -> its chunks in order;
    + the best hit's parent's own parts) -> (context blocks, gaps)."""
    scored = {c["chunk_id"]: c for c in pool}
    scored.update({h["chunk_id"]: h for h in hits})
    groups: dict[str, list[dict]] = {}  # group id -> all parts, in order (rank order of groups)
    for hit in hits:
        gid = hit["group_id"]
        if gid not in groups:
            parts = group_parts(gid) if int(hit.get("part_count") or 1) > 1 else [hit]
            parts = sorted(parts or [hit], key=lambda p: int(p["part_index"]))
            groups[gid] = [{**p, **_scores(scored.get(p["chunk_id"]))} for p in parts]

    chosen: dict[str, set[int]] = {gid: set() for gid in groups}
    used = 0
    # Pass 1: the ranked chunks themselves.
    for n, hit in enumerate(hits):
        gid, index = hit["group_id"], int(hit["part_index"])
        if index in chosen[gid] or hit.get("below_cut"):
            continue
        cost = token_cost(hit)
        if n == 0 or used + cost <= budget:
            chosen[gid].add(index)
            used += cost
    # Pass 2: siblings, nearest a hit first.
    for gid, parts in groups.items():
        if chosen[gid]:
            used = _fill_section(parts, chosen[gid], used, budget)

    # Pass 3: parent intros.
    intros = parent_intros(groups, chosen, budget - used, fetch_intros) if fetch_intros else {}
    used += sum(token_cost(intro[0]) for intro in intros.values())
    # Pass 4: subsections of kept sections that scored below the cut (`nodes.cap`), while they fit.
    below = {}
    for hit in hits:
        gid, index = hit["group_id"], int(hit["part_index"])
        if hit.get("below_cut") and not chosen[gid] and used + token_cost(hit) <= budget:
            chosen[gid].add(index)
            used += token_cost(hit)
            below[gid] = hit
    # Pass 5: the best hit's own subsections, from its page, in the page's order, while they fit.
    page = page_around(best_hit(hits), page_of, parent=section_budget > budget) if page_of else []
    unread = own_subsections(best_hit(hits), held_ids(groups, chosen, intros), page)
    read = while_they_fit(unread, budget - used)
    used += sum(token_cost(record) for record in read)
    own = adopt(read, groups, chosen)
    if section_budget > budget:
        own += beyond_budget(hits, groups, chosen, intros, parent_parts, unread[len(read):], used, section_budget,
                             page, {record["chunk_id"] for record in own})

    return lay_out(groups, chosen, intros, below, own)


def beyond_budget(hits: list[dict], groups: dict[str, list[dict]], chosen: dict[str, set[int]],
                  intros: dict[str, list[dict]], parent_parts: list[dict] | None, unread: list[dict],
                  used: int, section_budget: int, page: list[dict] = (), read: set[str] = frozenset()) -> list[dict]:
    """Passes 6 to 13: what the section budget adds once the context budget is spent, each pass
    while the whole context stays within `section_budget` (`chosen` and `intros` grow in place).
    `unread`: the best hit's own subsections that pass 5 left; `page`: the chunks `page_around` read;
    `read`: the chunk ids pass 5 read. Returns the subsections read on."""
    # Pass 6: the rest of a dominant split section.
    whole = {gid for gid, parts in groups.items() if len(chosen[gid]) == len(parts)}
    dominant = dominant_section(hits, whole)
    if dominant is not None and chosen[dominant]:
        used = _fill_section(groups[dominant], chosen[dominant], used, section_budget)
    # Pass 7: the holes between two kept parts of one section.
    for gid, parts in groups.items():
        used = _fill_holes(parts, chosen[gid], used, section_budget)
    # Pass 8: the rest of every section at least half in the context.
    for gid, parts in groups.items():
        if 2 * len(chosen[gid]) >= len(parts) > len(chosen[gid]):
            used = _fill_section(parts, chosen[gid], used, section_budget)
    # Pass 9: the rest of the best hit's parent's own text.
    if parent_parts:
        used = parent_body(groups, chosen, intros, parent_parts, used, section_budget)
    # Pass 10: the rest of the best hit's own subsections, on from where pass 5 stopped.
    held = held_ids(groups, chosen, intros)
    more = while_they_fit([r for r in unread if r["chunk_id"] not in held], section_budget - used)
    used += sum(token_cost(record) for record in more)
    own = adopt(more, groups, chosen)
    # Pass 11: the rest of the best hit's own split section.
    best = best_hit(hits)
    if best is not None:
        used = _fill_section(groups[best["group_id"]], chosen[best["group_id"]], used, section_budget)
    # Pass 12: the opening of every kept split section that lacks it, and the parts up to the kept ones.
    for gid, parts in groups.items():
        used = _fill_opening(parts, chosen[gid], used, section_budget)
    # Pass 13: the rest of the best hit's parent when the context holds half its subsections or more.
    if page:
        held = held_ids(groups, chosen, intros) | read | {record["chunk_id"] for record in own}
        rest = while_they_fit(mostly_held_parent(best, held, page), section_budget - used)
        own += adopt(rest, groups, chosen)
    return own


def best_hit(hits: list[dict]) -> dict | None:
    """The best-ranked kept hit (a subsection below the cut is none)."""
    return next((hit for hit in hits if not hit.get("below_cut")), None)


def page_around(best: dict | None, page_of, parent: bool) -> list[dict]:
    """The chunks of the best hit's page that passes 5, 10 and 13 read, in the page's order, in one
    round trip (`page_of(source, under)`): those under its parent section when pass 13 may read it
    (they hold the best hit's own subsections too), else those under the best hit. None for a page's
    intro: no heading above it, so the whole page is below it and no section is its own."""
    path = list((best or {}).get("heading_path") or [])
    if not path:
        return []
    return page_of(best["source"], path[:-1] if parent and len(path) > 1 else path)


def mostly_held_parent(best: dict | None, held: set[str], page: list[dict]) -> list[dict]:
    """The chunks of `page` under the best hit's parent section that the context lacks (`held`: chunk
    ids), in the page's order, when it already holds at least half of that parent's subsections, two
    at least (a subsection counts as held with any of its chunks): the question is about the parent,
    whose subsections are steps or options of one thing, not about one of them. Nothing for a top
    section (its parent is the whole page)."""
    path = list((best or {}).get("heading_path") or [])
    if len(path) < 2:
        return []
    parent = {"source": best["source"], "label": best.get("label"), "heading_path": path[:-1]}
    records = [r for r in page if under_section(r, parent)]
    children: dict[tuple, bool] = {}
    for record in records:
        child = tuple(record["heading_path"][:len(path)])
        children[child] = children.get(child, False) or record["chunk_id"] in held
    kept = sum(children.values())
    if kept < 2 or 2 * kept < len(children):
        return []
    return [r for r in records if r["chunk_id"] not in held]


def lay_out(groups: dict[str, list[dict]], chosen: dict[str, set[int]], intros: dict[str, list[dict]],
            below: dict[str, dict], own: list[dict]) -> tuple[list[dict], list[dict]]:
    """The chosen parts as context blocks: sections in rank order, each after its parent intro,
    parts in order with the overlap of neighbours trimmed, subsections after their section."""
    context = []
    for gid, parts in groups.items():
        if not chosen[gid] or gid in below:
            continue
        context.extend({**to_block(intro), "context_role": "parent_intro"} for intro in intros.get(gid, ()))
        previous = None
        for part in parts:
            index = int(part["part_index"])
            if index not in chosen[gid]:
                previous = None
                continue
            block = to_block(part)
            if previous is not None and int(previous["part_index"]) == index - 1:
                block["text"] = trim_overlap(previous["text"], part["text"])
                block["reading"] = trim_overlap(reading_of(previous), reading_of(part))
            context.append(block)
            previous = part
    for gid, hit in below.items():  # each right after the last block of the section it belongs to
        at = after_section(context, hit)  # with its other parts when a later pass read them from the page
        context[at:at] = [{**to_block(part), "context_role": "subsection"} for part in groups[gid]
                          if int(part["part_index"]) in chosen[gid]]
    if own:  # one run, in the page's order, after the last block of the section they complete
        at = after_section(context, own[0])
        context[at:at] = [{**to_block(record), "context_role": "subsection"} for record in own]
    return context, section_gaps(context)


def own_subsections(best: dict | None, held: set[str], page: list[dict]) -> list[dict]:
    """The best hit's subsections that the context does not hold yet (`held`: chunk ids), from the
    chunks of its page (`page_around`), in the page's order: the section as its page defines it runs
    through its last subsection, and on a reference page each option is a subsection a few lines
    long ("### max_retries"), so the hit on the option group alone leaves every option out. The
    caller takes them `while_they_fit`."""
    if best is None:
        return []
    return [record for record in page if record["chunk_id"] not in held and under_section(record, best)]


def held_ids(groups: dict[str, list[dict]], chosen: dict[str, set[int]], intros: dict[str, list[dict]]) -> set[str]:
    """The chunk ids the context holds so far: chosen parts and parent intros (and a parent's own text)."""
    held = {p["chunk_id"] for gid, parts in groups.items() for p in parts if int(p["part_index"]) in chosen[gid]}
    return held | {intro["chunk_id"] for kept in intros.values() for intro in kept}


def adopt(records: list[dict], groups: dict[str, list[dict]], chosen: dict[str, set[int]]) -> list[dict]:
    """`records` read from the page, less those that are parts of a section the context already has
    as a group: those are chosen there instead, so a later pass that completes or opens that section
    sees them and no part is laid out twice."""
    own = []
    for record in records:
        gid = record.get("group_id")
        if gid in groups:
            index = int(record["part_index"])
            if all(int(part["part_index"]) != index for part in groups[gid]):
                # a subsection below the cut comes as its hit alone (its parts are not fetched)
                groups[gid] = sorted([*groups[gid], {**record, **_scores(None)}], key=lambda p: int(p["part_index"]))
            chosen[gid].add(index)
        else:
            own.append(record)
    return own


def while_they_fit(records: list[dict], room: int) -> list[dict]:
    """`records` in the order given up to the first that does not fit in `room` tokens, unscored (they
    were read, not ranked): a section read on from where the context stops, never past a hole."""
    taken = []
    for record in records:
        cost = token_cost(record)
        if cost > room:
            break
        taken.append({**record, **_scores(None)})
        room -= cost
    return taken


def _fill_section(parts: list[dict], chosen: set[int], used: int, budget: int) -> int:
    """Adds to `chosen` the section's other parts, nearest a chosen one first, each while the
    context stays within `budget`; returns the tokens used after."""
    anchors = sorted(chosen)
    by_index = {int(p["part_index"]): p for p in parts}
    order = sorted((i for i in by_index if i not in chosen), key=lambda i: (min(abs(i - a) for a in anchors), i))
    for index in order:
        cost = token_cost(by_index[index])
        if used + cost <= budget:
            chosen.add(index)
            used += cost
    return used


def _fill_opening(parts: list[dict], chosen: set[int], used: int, budget: int) -> int:
    """Adds to `chosen` a kept section's first part when it lacks it, then the parts between it and
    the kept ones (`_fill_holes`), each while the context stays within `budget`; returns the tokens
    used after. The heading's own first lines say what the section is about and where its steps
    begin ("1. Stop the server"); a quote of parts 2 to 4 starts in the middle of them."""
    if not chosen or len(parts) < 2:
        return used
    first = int(parts[0]["part_index"])
    cost = token_cost(parts[0])
    if first in chosen or used + cost > budget:
        return used
    chosen.add(first)
    return _fill_holes(parts, chosen, used + cost, budget)


def _fill_holes(parts: list[dict], chosen: set[int], used: int, budget: int) -> int:
    """Adds to `chosen` the parts between its first and last kept part, in order, each while the
    context stays within `budget` (a quote of parts 1 and 5 of a section says nothing of what joins
    them); returns the tokens used after."""
    if len(chosen) < 2:
        return used
    by_index = {int(p["part_index"]): p for p in parts}
    for index in range(min(chosen) + 1, max(chosen)):
        if index in chosen or index not in by_index:
            continue
        cost = token_cost(by_index[index])
        if used + cost > budget:
            break
        chosen.add(index)
        used += cost
    return used


def under_section(record: dict, section: dict) -> bool:
    """Whether `record` sits under `section`: the same file, the section's heading path extended."""
    path, head = list(record.get("heading_path") or []), list(section.get("heading_path") or [])
    return (record["source"] == section["source"] and (record.get("label") or None) == (section.get("label") or None)
            and len(path) > len(head) and path[:len(head)] == head)


def after_section(context: list[dict], record: dict) -> int:
    """Where a subsection goes: after the last block of the section it sits under (the end of the
    context when there is none)."""
    position = len(context)
    for index, block in enumerate(context):
        if under_section(record, block):
            position = index + 1
    return position


def parent_body(groups: dict[str, list[dict]], chosen: dict[str, set[int]], intros: dict[str, list[dict]],
                parent_parts: list[dict], used: int, section_budget: int) -> int:
    """Completes the best hit's parent intro with the parent's other own parts (`parent_parts`, all of
    them), in order, each while the context stays within `section_budget`; it starts from the first
    part when the intro pass left it out. Nothing when the parent is in the context as a section of
    its own, or is not the best hit's. Returns the tokens used after."""
    best = next((gid for gid, parts in groups.items() if chosen[gid]), None)
    parent = parent_parts[0]["group_id"]
    if best is None or parent in groups or parent_group_id(groups[best][0]) != parent:
        return used
    kept = {int(intro["part_index"]) for intro in intros.get(best, ()) if intro["group_id"] == parent}
    added = while_they_fit([part for part in sorted(parent_parts, key=lambda p: int(p["part_index"]))
                            if int(part["part_index"]) not in kept], section_budget - used)
    used += sum(token_cost(part) for part in added)
    if added:
        intros[best] = sorted([*intros.get(best, ()), *added], key=lambda p: int(p["part_index"]))
    return used


def parent_intros(groups: dict[str, list[dict]], chosen: dict[str, set[int]], room: int,
                  fetch_intros) -> dict[str, list[dict]]:
    """child group id -> its parent's intro (as a list of one), for the kept subsections whose parent
    fits in `room`.

    One intro per parent, before the first (best-ranked) child that needs it; none for a
    parent already in the context as a section of its own.
    """
    wanted: dict[str, str] = {}  # parent group id -> first child group id
    for gid, parts in groups.items():
        parent = parent_group_id(parts[0])
        if chosen[gid] and parent:
            wanted.setdefault(parent, gid)
    if not wanted or room <= 0:
        return {}
    present = {gid for gid in groups if chosen[gid]}
    candidates = [(token_cost(intro), n, gid, intro)
                  for n, (gid, intro) in enumerate(zip(wanted.values(), fetch_intros(list(wanted))))
                  if intro and intro["group_id"] not in present]
    intros = {}
    for cost, _, gid, intro in sorted(candidates, key=lambda c: (c[0], c[1])):  # shortest first
        if cost <= room:
            intros[gid] = [{**intro, **_scores(None)}]
            room -= cost
    return intros


def _scores(candidate: dict | None) -> dict:
    if not candidate:
        return {"similarity": None, "rerank_score": None}
    return {"similarity": candidate.get("similarity"), "rerank_score": candidate.get("rerank_score")}
