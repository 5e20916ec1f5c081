"""evidence: the lines of the context that best answer the question, quoted verbatim.

The context is cut into quotable units (`nodes.quotable`: sentences, list items, table rows
with their header). Each unit is scored against the standalone question:

    score = LEXICAL_WEIGHT · rarity-weighted share of the question's terms found in the unit
            (and its heading label)
          + SEMANTIC_WEIGHT · cosine of the unit's embedding to the question's
          + RANK_WEIGHT · the rerank score of the unit's section, relative to the best

Key facts of one question often sit in two or three neighbouring units, so the best unit is
taken with the neighbours that complete it: the unit before one that opens by pointing back
("This ...", "It ...", "Clicking on this ..."), the unit after one that points forward (ends
with ":") or that itself points back. Then the next best unit, and so on while the word
budget lasts and a unit still scores within `KEEP_RATIO` of the best. The chosen units are
laid out in document order, one quoted passage per run of neighbours, each ending with the
citation marker of its block, and nothing inside a passage is reworded.

The word budget is `evidence_words` for each thing the question asks, the second and third
at a quarter of that (`evidence_budget`): "Where do I create a funnel, and is there a limit to
its steps?" needs two passages where "How do I create a funnel?" needs one, and a one-ask
answer stays short. Words are counted as a reader counts an answer's length
(`content_word_count`: no "the", no table pipes, no link targets), so the budget is the
length limit itself: 120 per ask keeps the median answer within 120 words on any docs.

A question that asks which things exist ("Which placeholders can I use ...?", "What are the
different actions ...?"; `asks_for_a_list`) is answered by a list or a table, whose items rarely
repeat the question's words: when a unit chosen for it is a list item or a table row, or
announces one (ends with ":"), the whole list or table is quoted (up to `LIST_UNITS` units),
within `LIST_BUDGET_FACTOR` times the word budget (docs/TUNING.md, "A dominant section").

The evidence is known as soon as retrieval ends: generate streams it before the model's
first token.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from langchain_core.runnables import RunnableConfig

from fieldguide.content_words import content_word_count, terms
from graph.options import options_for
from graph.resources import resources_for
from graph.timing import timed
from nodes.condense import own_part
from nodes.quotable import Unit, context_units, looks_like_instruction

LEXICAL_WEIGHT = 1.0
SEMANTIC_WEIGHT = 1.0
RANK_WEIGHT = 0.3
LABEL_WEIGHT = 0.5  # a term found only in the unit's heading label counts half
KEEP_RATIO = 0.5   # a further unit must score at least this share of the first
MAX_PASSAGES = 7
MAX_ASKS = 3  # asks beyond this add no budget
EXTRA_ASK_SHARE = 0.25  # budget of each further ask, as a share of the first's
ANNOUNCED_UNITS = 6  # list items or rows taken after a unit that ends with ":"
ADJACENT_BONUS = 0.2  # for a unit right beside a chosen one in its paragraph, list or table
COVERED_FACTOR = 0.3  # what a question term still counts once a chosen unit has it
LIST_UNITS = 40  # most items or rows quoted as one whole list or table
LIST_BUDGET_FACTOR = 2  # a whole list or table may fill this many times the word budget
_POINTS_BACK = re.compile(
    r"^(?:[-*+]\s+|\d{1,3}[.)]\s+)?(?:\*\*|_)?(?:this|that|these|those|it|its|they|them|their|there|here|such|"
    r"then|also|otherwise|however|instead|in this case|in that case|to do so|once|after that|"
    r"(?:\w+ing )?(?:on|at|in) (?:this|that|it|them))\b", re.IGNORECASE)


_WORDS = re.compile(r"[A-Za-z]{2,}")
# One ask ends at "?"; a second can also be joined to the first by a conjunction and a question word
# ("Where is it, and how do I start over?"); a conjunction that opens the question ("And how ...?")
# joins it to the previous turn, not to a second ask.
_ASK = re.compile(r"\?|(?<=[\w,;])\s+(?:and|or|also|but)\s+(?:how|where|what|which|when|why|who|whether|is|are|can|could|"
                  r"does|do|did|will|would|should|must)\b", re.IGNORECASE)


# "Which placeholders ...", "What environment variables ...": which/what, then a plural within the
# next three words, before any word that opens a clause. Verbs in -s after "what" ("What happens")
# and words that only look plural ("status", "access") are not the things asked for.
_WHICH = re.compile(r"\b(?:which|what)\s+((?:[\w-]+\s+){0,2}[\w-]+)", re.IGNORECASE)
_LIST_FORMS = re.compile(r"\b(?:which|what)\s+(?:are|were)\s+(?:all\s+)?(?:the\s+)?|"
                         r"\b(?:which|what)\s+(?:kinds?|types?|sorts?)\s+of\b|\blist\s+(?:of|all)\b|"
                         r"\b(?:are there|exist|are available|are supported)\b", re.IGNORECASE)
_CLAUSE_WORDS = frozenset("""a an the this that these those it its is are was were be do does did can could will would
should shall may might must has have had i you we they he she my your our their one ones kind sort type one's""".split())
_VERBS_IN_S = frozenset("""happens means does goes makes causes counts works gets takes needs shows says controls decides
determines triggers stays runs applies wins looks holds sets lets tells changes allows belongs exists matters uses
comes keeps puts sends starts stops""".split())


def asks_for_a_list(question: str) -> bool:
    """Whether the reader's own question asks which things exist or apply ("Which log levels can I
    set?", "What are the different ...?", "What details does the log keep?") rather than for one thing."""
    own = own_part(question)
    if _LIST_FORMS.search(own):
        return True
    for match in _WHICH.finditer(own):
        for word in match.group(1).lower().split():
            if word in _CLAUSE_WORDS or word in _VERBS_IN_S:
                break
            if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
                return True
    return False


def whole_group(unit: Unit, units_of_block: list[Unit], continuation: list[Unit] | None = None) -> list[Unit]:
    """The list or table `unit` belongs to, or the one it announces (it ends with ":"), with the
    announcing unit: every item or row of it, up to `LIST_UNITS`, going on into the section's next
    part when the list does. Empty when there is none."""
    following = units_of_block[unit.position + 1:] or list(continuation or [])
    if unit.kind in ("item", "row"):
        members = [u for u in units_of_block if u.group == unit.group]
        start = members[0].position
        before = units_of_block[start - 1] if start > 0 else None
        run = ([before] if before is not None and before.text.rstrip().endswith(":") else []) + members
        if members[-1].position == len(units_of_block) - 1 and continuation and continuation[0].kind == unit.kind:
            run += [u for u in continuation if u.group == continuation[0].group]
    elif unit.text.rstrip().endswith(":") and following and following[0].kind in ("item", "row"):
        run = [unit] + [u for u in following if u.group == following[0].group and u.block == following[0].block]
    else:
        return []
    return run[:LIST_UNITS + 1]


def asks(question: str) -> int:
    """How many things a question asks (1 to `MAX_ASKS`): its question marks and the questions joined
    to another by "and"/"or". A follow-up's carried topic (after " — about: ") asks nothing."""
    own = own_part(question)
    return max(1, min(MAX_ASKS, len(_ASK.findall(own))))


def evidence_budget(question: str, words_per_ask: int) -> int:
    """Words of evidence for a question: `words_per_ask` for its first ask, a quarter of that for each further one."""
    return round(words_per_ask * (1 + EXTRA_ASK_SHARE * (asks(question) - 1)))


@dataclass
class ScoredUnit:
    unit: Unit
    matched: dict[str, float]  # question term -> its share of the question's weight, as found here
    base: float                # SEMANTIC_WEIGHT · cosine + RANK_WEIGHT · section rank
    semantic: float

    def score(self, covered: set[str] = frozenset()) -> float:
        """The unit's score; terms already covered by chosen units count `COVERED_FACTOR`."""
        lexical = sum(w * (COVERED_FACTOR if t in covered else 1.0) for t, w in self.matched.items())
        return LEXICAL_WEIGHT * lexical + self.base


def unit_words(unit: Unit) -> int:
    """What quoting the unit costs of the word budget: its content words (see the module doc)."""
    return content_word_count(unit.text)


def score_units(question: str, units: list[Unit], blocks: list[dict], question_vector=None,
                unit_vectors=None) -> list[ScoredUnit]:
    """Every unit with its score parts against the question (same order as `units`)."""
    wanted = terms(question)
    body = [terms(u.text) for u in units]
    labels = [terms(u.label) for u in units]
    n = max(1, len(units))
    df = Counter(t for own, label in zip(body, labels) for t in (own | label) & wanted)
    weight = {t: math.log((n + 1) / (df[t] + 0.5)) for t in wanted}
    total = sum(weight.values()) or 1.0
    ranks = section_ranks(blocks)
    similarities = cosines(question_vector, unit_vectors) if question_vector is not None and unit_vectors is not None \
        else [0.0] * len(units)
    scored = []
    for index, unit in enumerate(units):
        own, label = body[index], labels[index]
        matched = {t: weight[t] / total for t in wanted & own}
        matched.update({t: LABEL_WEIGHT * weight[t] / total for t in (wanted & label) - own})
        semantic = max(0.0, float(similarities[index]))
        base = SEMANTIC_WEIGHT * semantic + RANK_WEIGHT * ranks[unit.block]
        scored.append(ScoredUnit(unit, matched, base, round(semantic, 4)))
    return scored


def substantive(unit: Unit) -> bool:
    """A unit worth quoting: three words of letters at least (not a bare "3." or a link), and not
    text that addresses the assistant (chunk text is data: an instruction in it is never quoted)."""
    return len(_WORDS.findall(unit.text)) >= 3 and not looks_like_instruction(unit.text)


def section_ranks(blocks: list[dict]) -> list[float]:
    """Per block, its section's best rerank score relative to the context's best (0..1).

    Sibling parts and parent intros carry no score of their own: they take their section's
    (a parent intro, its child's)."""
    best_of_group: dict[str, float] = {}
    for block in blocks:
        if block.get("rerank_score") is not None:
            gid = block.get("group_id")
            best_of_group[gid] = max(best_of_group.get(gid, -1e9), float(block["rerank_score"]))
    scores: list[float | None] = [best_of_group.get(b.get("group_id")) for b in blocks]
    for index in range(len(blocks) - 2, -1, -1):  # a parent intro sits right before its child
        if scores[index] is None and blocks[index].get("context_role") == "parent_intro":
            scores[index] = scores[index + 1]
    known = [s for s in scores if s is not None]
    if not known:
        return [0.0] * len(blocks)
    top, low = max(known), min(known)
    if top == low:  # every scored section is the best one
        return [1.0 if s is not None else 0.0 for s in scores]
    return [max(0.0, (s - low) / (top - low)) if s is not None else 0.0 for s in scores]


def cosines(vector, vectors) -> list[float]:
    """Cosine of `vector` to each of `vectors`."""
    import numpy as np

    if len(vectors) == 0:
        return []
    matrix = np.asarray(vectors, dtype=np.float32)
    query = np.asarray(vector, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
    return (matrix @ query / np.where(norms == 0, 1.0, norms)).tolist()


def neighbours(unit: Unit, units_of_block: list[Unit], continuation: list[Unit] | None = None) -> list[Unit]:
    """The unit with the neighbours that complete it.

    Back: while the first unit of the run points back ("This ...", "Clicking on it ..."),
    its predecessor in the same paragraph or list (at most two). Forward: the next unit of
    the same group when it points back; and when the unit announces what follows (it ends
    with ":"), the list or table right after it, up to `ANNOUNCED_UNITS` units, also when
    it opens the next part of the same section (`continuation`, that part's units).
    """
    run = [unit]
    for _ in range(2):
        first = run[0]
        if first.position == 0 or not _POINTS_BACK.match(first.text):
            break
        previous = units_of_block[first.position - 1]
        if previous.group != first.group:
            break
        run.insert(0, previous)
    following = units_of_block[unit.position + 1:]
    if not following and continuation:  # the section goes on in the next block (its next part)
        following = continuation
    if unit.text.rstrip().endswith(":") and following:
        group = following[0].group
        run.extend([u for u in following if u.group == group][:ANNOUNCED_UNITS])
    elif following and following[0].group == unit.group and _POINTS_BACK.match(following[0].text):
        run.append(following[0])
    return run


def choose(scored: list[ScoredUnit], word_budget: int, continues: dict[int, int] | None = None,
           whole_lists: bool = False) -> list[Unit]:
    """The units to quote, in document order.

    Greedy: the best unit with its neighbours, then the best of the rest, where a question
    term that the chosen units already cover counts less, so that a question in two parts
    gets both parts. Stops at the word budget, at `MAX_PASSAGES` passages, or when the best
    remaining unit scores under `KEEP_RATIO` of the first. `continues` maps a block to the
    block holding its section's next part. With `whole_lists` (the question asks which things
    exist) a chosen item, row or unit announcing a list brings its whole list or table, within
    `LIST_BUDGET_FACTOR` times the budget.
    """
    continues = continues or {}
    candidates = [s for s in scored if substantive(s.unit)]
    if not candidates:
        return []
    by_block: dict[int, list[Unit]] = {}
    for item in scored:
        by_block.setdefault(item.unit.block, []).append(item.unit)
    chosen: dict[tuple[int, int], Unit] = {}
    covered: set[str] = set()
    used = passages_used = 0
    first_best = None

    def value_of(item: ScoredUnit) -> float:
        unit = item.unit
        beside = any((unit.block, unit.position + d) in chosen and chosen[(unit.block, unit.position + d)].group
                     == unit.group for d in (-1, 1))
        return item.score(covered) + (ADJACENT_BONUS if beside else 0.0)

    while candidates:
        item = max(candidates, key=lambda s: (value_of(s), -s.unit.block, -s.unit.position))
        candidates.remove(item)
        value = value_of(item)
        if first_best is None:
            first_best = value
        elif value < KEEP_RATIO * first_best or passages_used >= MAX_PASSAGES:
            break
        after = by_block.get(continues[item.unit.block]) if item.unit.block in continues else None
        whole = whole_group(item.unit, by_block[item.unit.block], after) if whole_lists else []
        run = [u for u in (whole or neighbours(item.unit, by_block[item.unit.block], after))
               if (u.block, u.position) not in chosen]
        cost = sum(unit_words(u) for u in run)
        if chosen and used + cost > word_budget * (LIST_BUDGET_FACTOR if whole else 1):
            continue
        adjacent = any((u.block, u.position + d) in chosen for u in run for d in (-1, 1))
        passages_used += 0 if adjacent else 1
        for u in run:
            chosen[(u.block, u.position)] = u
        used += cost
        covered |= set(item.matched)
        candidates = [c for c in candidates if (c.unit.block, c.unit.position) not in chosen]
    return [chosen[key] for key in sorted(chosen)]


def passages(units: list[Unit]) -> list[list[Unit]]:
    """Runs of units that follow each other in one block."""
    runs: list[list[Unit]] = []
    for unit in units:
        last = runs[-1][-1] if runs else None
        if last is not None and last.block == unit.block and last.position + 1 == unit.position:
            runs[-1].append(unit)
        else:
            runs.append([unit])
    return runs


def quote_passage(run: list[Unit], number: int) -> str:
    """One passage as a Markdown block quote, verbatim, ending with its citation marker."""
    lines: list[str] = []
    header_shown = ""
    for index, unit in enumerate(run):
        previous = run[index - 1] if index else None
        if unit.kind == "row":
            if unit.header != header_shown or (previous is not None and previous.kind != "row"):
                if lines:
                    lines.append("")
                lines.extend(unit.header.split("\n"))
                header_shown = unit.header
            lines.append(unit.text)
        elif unit.kind == "sentence" and previous is not None and previous.kind == "sentence" \
                and previous.group == unit.group:
            lines[-1] += " " + unit.text  # sentences of one paragraph stay one paragraph
        else:
            if lines and (unit.kind != "item" or previous is None or previous.kind != "item"):
                lines.append("")
            lines.extend(unit.text.split("\n"))
            header_shown = ""
    marker = f"[{number}]"
    if run[-1].kind in ("row", "code"):
        lines += ["", marker]  # a marker line right under a table would become one of its rows
    else:
        lines[-1] += " " + marker
    return "\n".join("> " + line if line else ">" for line in lines)


def evidence_markdown(units: list[Unit]) -> str:
    """The chosen units as quoted passages, one per run of neighbours, blank line between."""
    return "\n\n".join(quote_passage(run, run[0].block + 1) for run in passages(units))


def select_evidence(question: str, blocks: list[dict], word_budget: int, question_vector=None,
                    embed_texts=None) -> list[Unit]:
    """The units to quote for a question from its context blocks."""
    units = context_units(blocks)
    if not units:
        return []
    vectors = embed_texts([embedding_text(u) for u in units]) if embed_texts is not None else None
    return choose(score_units(question, units, blocks, question_vector, vectors), word_budget, next_parts(blocks),
                  asks_for_a_list(question))


def next_parts(blocks: list[dict]) -> dict[int, int]:
    """block index -> index of the block right after it that holds the next part of its section."""
    return {i: i + 1 for i in range(len(blocks) - 1)
            if blocks[i].get("group_id") and blocks[i + 1].get("group_id") == blocks[i]["group_id"]
            and int(blocks[i + 1].get("part_index") or 0) == int(blocks[i].get("part_index") or 0) + 1}


def embedding_text(unit: Unit) -> str:
    """What is embedded for a unit: its heading label, its table header, its text."""
    header = unit.header.split("\n")[0] + "\n" if unit.header else ""
    return f"{unit.label}\n{header}{unit.text}" if unit.label else f"{header}{unit.text}"


def unit_record(unit: Unit) -> dict:
    return {"n": unit.block + 1, "kind": unit.kind, "text": unit.text, "header": unit.header or None,
            "label": unit.label}


@timed("evidence")
def evidence(state: dict, config: RunnableConfig = None) -> dict:
    blocks = state.get("context") or []
    if state.get("abstain") or not blocks:
        chosen: list[Unit] = []
    else:
        options = options_for(config)
        resources = resources_for(config)
        question = state.get("standalone_question") or state["question"]
        chosen = select_evidence(question, blocks, evidence_budget(question, options.evidence_words),
                                 state.get("query_vector"), resources.text_vectors.embed)
    return {
        "evidence": [unit_record(u) for u in chosen],
        "evidence_markdown": evidence_markdown(chosen) if chosen else "",
    }
