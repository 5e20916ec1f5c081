"""cap: decide abstention, then a strict minimum, a window below the best score, and a maximum.

Abstention is relative to the question's own candidates: when the best score does not stand
`abstain_margin` above the median of the best `MARGIN_POOL` sections' scores (`top_margin`,
each section of the search results once, by its best part), nothing stands out and the turn
abstains. Otherwise a candidate stays when it scores at least
`rerank_min` (the strict minimum) and no more than `rank_window` margin units below the best
(so a fourth chunk far below the first does not take the budget from the first one's parts);
while those kept hold under `SMALL_CONTEXT_SHARE` of the context budget, the window reaches
`SMALL_CONTEXT_WINDOW` times as far (`reach_further`): a short best candidate far above the rest
otherwise leaves a context of one FAQ entry.
At most `max_chunks` stay, or up to twice as many while those kept are small (`at_most`).
`abstain_margin`, `rerank_min` and the margin unit come from the index's calibration
(`fieldguide.calibration`) unless a request sets them.

Apart from the kept candidates, `below_cut` passes on the subsections of kept sections that
the cut left out (`subsections_below_cut`): `reassemble` adds them with the budget that is left.

With `dedupe` on, a candidate whose text nearly repeats a better-ranked one (the same
section copied into two pages, say) is dropped before the maximum is applied, so the
slots and the budget go to distinct content.

A follow-up that names something no chunk of the index holds ("Can I use a YubiKey for it
instead?", "And straight to my Dropbox?"; `fieldguide.names`) abstains too: its carried topic
makes the previous answer's section stand out, so the margin cannot tell that the docs say
nothing about what is newly asked. Single questions are left to the margin, which already
abstains on the ones the development sets hold (docs/BENCHMARKS.md, "Follow-ups that name what
the docs never mention").

When nothing survives, the turn abstains: the generator will say the docs do not
cover the question and name the nearest sections (the best reranked candidates, or the best
search results when none passed the similarity threshold).

Two kinds of turn are the exception. A question that misses the thresholds narrowly
(`near_miss`: its best candidate stands out by at least `partial_band` of the abstain margin, and
falls short of the strict minimum by less than the rest of a margin) whose closest candidates
hold at least `NEAR_MISS_HELD` of its weight (`closest_hold`; words close in meaning count, as in
the coverage verdict), and a follow-up (with
`closest_for_follow_ups` on) whatever its miss, keep the best of their candidates within the
window below the best, and `closest_only` says why: the coverage verdict is then `partial`, and
the reader is told the docs may not answer it and shown the closest they come. A verdict in three
grades needs no hard line at the margin: on the unseen sets one answerable question in seven
missed it by less than half a margin, as did a few unanswerable ones, and no margin parts them
(docs/benchmarks/answers.md, "Questions that narrowly miss the margin"). A narrow miss whose
closest sections hold little of what was asked missed by chance, and abstains: on a small index
the pool is short, and an off-topic question can come near the margin. The conversation's
topic was covered one turn before, and a follow-up's few words ("And how do I get rid of it
entirely later?") leave its candidates flat: near a CLI reference's many sibling pages, the right
one stands out of them too little (docs/BENCHMARKS.md, "Follow-ups that stand out too little").
A follow-up that names what no chunk holds still abstains.
"""
from __future__ import annotations

import itertools
import re

from langchain_core.runnables import RunnableConfig

from fieldguide.calibration import MARGIN_POOL, section_scores, top_margin
from fieldguide.content_words import held_share, stem
from fieldguide.names import unknown_names
from fieldguide.near_words import near_share
from fieldguide.words import words
from graph.options import options_for
from graph.resources import resources_for
from graph.state import question_of
from graph.timing import timed
from ingest.dialects import reading_of
from ingest.tokens import reads_as_words
from nodes.condense import earlier_questions, own_part
from nodes.reassemble import token_cost, under_section

NEAREST_SECTIONS = 3
# A narrow miss keeps its closest candidates when they hold at least this share of the question's
# weight (docs/benchmarks/answers.md, "Questions that narrowly miss the margin").
NEAR_MISS_HELD = 0.3
# Below this share of the context budget the kept chunks are small ones, and the maximum lets more in.
SMALL_CONTEXT_SHARE = 0.4
SMALL_CONTEXT_WINDOW = 1.5  # a context under SMALL_CONTEXT_SHARE reaches this many rank windows below the best
DUPLICATE_OVERLAP = 0.8  # Jaccard of word trigrams; on the dev corpus copies sit at 0.8-1.0, nearly all other pairs below 0.5
_WORD = re.compile(r"\w+")


def shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i:i + 3]) for i in range(max(1, len(words) - 2))}


def drop_near_duplicates(ranked: list[dict], overlap: float = DUPLICATE_OVERLAP) -> list[dict]:
    """`ranked` without candidates whose text nearly repeats a better-ranked one's."""
    kept, kept_shingles = [], []
    for candidate in ranked:
        own = shingles(reading_of(candidate))
        if any(len(own & other) >= overlap * len(own | other) for other in kept_shingles):
            continue
        kept.append(candidate)
        kept_shingles.append(own)
    return kept


def nearest_sections(candidates: list[dict], limit: int = NEAREST_SECTIONS) -> list[dict]:
    """The closest distinct sections, for pointing the reader somewhere when abstaining: by the
    scorer's order when the candidates were reranked (it reads the question's words too, so a
    section that merely sounds alike does not lead), else by cosine."""
    seen, nearest = set(), []
    for c in sorted(candidates, key=lambda c: (-(c.get("rerank_score") or 0.0), -c["similarity"])):
        key = (c["source"], tuple(c["heading_path"]))
        if key in seen:
            continue
        seen.add(key)
        nearest.append({"source": c["source"], "heading_path": list(c["heading_path"]),
                        "page_title": c.get("page_title") or "", "similarity": c["similarity"]})
        if len(nearest) == limit:
            break
    return nearest


def questions_before(state: dict) -> list[str]:
    """The conversation's questions before this turn's (route has added this one by now)."""
    asked = earlier_questions(state)
    return asked[:-1] if asked and asked[-1] == state["question"] else asked


def names_the_docs_lack(state: dict, config) -> list[str]:
    """What a condensed follow-up names that no chunk of the index holds and the conversation
    had not named before; none for a question that stands alone, or an index without term statistics."""
    if state.get("condensed_by") not in ("rules", "model"):
        return []
    term_stats = resources_for(config).term_stats
    return unknown_names(state["question"], term_stats.document_frequency if term_stats else None,
                         " ".join(questions_before(state)))


def reach_further(kept: list[dict], ranked: list[dict], floor: float, max_chunks: int, budget: int) -> list[dict]:
    """`kept` (the head of `ranked` within the window), and the candidates after it down to `floor`
    while those kept hold less than `SMALL_CONTEXT_SHARE` of the context budget, up to `max_chunks`.
    A best candidate that stands far above the rest narrows the window to it alone, and when it is
    a short FAQ entry the context holds 90 words while the section that answers ranks third,
    just past the window (docs/TUNING.md, "Small sections")."""
    above = itertools.takewhile(lambda c: c["rerank_score"] >= floor, ranked[len(kept):])
    return while_small(list(kept), above, budget, max_chunks)


def while_small(taken: list[dict], more, budget: int, limit: int) -> list[dict]:
    """`taken`, and the candidates of `more` in order while those taken hold less than
    `SMALL_CONTEXT_SHARE` of the context budget, up to `limit` in all."""
    size = sum(token_cost(c) for c in taken)
    for candidate in more:
        if size >= SMALL_CONTEXT_SHARE * budget or len(taken) >= limit:
            break
        taken.append(candidate)
        size += token_cost(candidate)
    return taken


def at_most(kept: list[dict], max_chunks: int, budget: int) -> list[dict]:
    """The first `max_chunks` of the kept candidates, and more of them (up to twice as many) while
    those taken hold less than `SMALL_CONTEXT_SHARE` of the context budget. The maximum counts
    sections of the usual size; on a reference page each option is a section of a few lines
    ("### max_retries"), and four of them leave most of the budget, and often the option asked
    about, out (docs/TUNING.md, "Small sections")."""
    limit = max(0, max_chunks)
    return while_small(kept[:limit], kept[limit:2 * limit], budget, 2 * limit)


def subsections_below_cut(kept: list[dict], ranked: list[dict], limit: int) -> list[dict]:
    """Up to `limit` reranked candidates the cut left out that sit under a kept section (the same
    file, the kept heading path extended), best first, marked `below_cut`.

    A section that opens a topic often says little itself ("Immich supports the Cast protocol")
    and leaves the how to its subsections ("Enable Google Cast Support"), which score lower
    because the question's words are spread over both. Reassembly adds them only with the
    budget left once the kept chunks, their parts and their parent intros are in, so they never
    displace what the cut kept (docs/TUNING.md, "Subsections below the cut")."""
    if limit <= 0:
        return []
    taken = {c["chunk_id"] for c in kept}
    sections = [c for c in kept if c.get("chunk_type") != "note"]
    below = []
    for candidate in ranked:
        if candidate["chunk_id"] in taken or not any(under_section(candidate, section) for section in sections):
            continue
        below.append({**candidate, "below_cut": True})
        taken.add(candidate["chunk_id"])
        if len(below) == limit:
            break
    return below


def pool_scores(ranked: list[dict], searched: list[dict]) -> list[float]:
    """One score per section for the margin's pool: its best rerank score, or, for a section
    whose every part fell under the similarity threshold, its best similarity (a question with
    one surviving candidate still has a pool to stand out from)."""
    scores = section_scores(ranked, [c["rerank_score"] for c in ranked])
    reranked = {c.get("group_id") or c.get("chunk_id") for c in ranked}
    below = [c for c in searched if (c.get("group_id") or c.get("chunk_id")) not in reranked]
    return scores + section_scores(below, [c["similarity"] for c in below])


def near_miss(stands_out: float, best: float, margin: float, minimum: float, band: float) -> bool:
    """Whether a question that abstains by the thresholds missed them by less than the band allows:
    its best candidate stands out by at least `band` of the abstain margin, and falls short of the
    strict minimum by less than the rest of a margin (`partial_band`; 1 allows no miss)."""
    if band >= 1.0 or margin <= 0:
        return False
    return stands_out >= band * margin and best >= minimum - (1.0 - band) * margin


def closest_hold(question: str, closest: list[dict], term_stats, embed=None) -> float:
    """The share of the question's weight (its words by their idf in the index) that the closest
    candidates' readings and headings hold. When the words themselves fall short of `NEAR_MISS_HELD`
    and `embed` is given, words close in meaning count too (`fieldguide.near_words`, as the coverage
    verdict reads the quotes): "signup form" for the docs' "subscription form"."""
    text_words = {w for c in closest for w in words(reading_of(c) + "\n" + " ".join(c.get("heading_path") or []))}
    df, documents = (term_stats.document_frequency, term_stats.documents) if term_stats else (None, 0)
    share = held_share(own_part(question), {stem(w) for w in text_words}, df, documents)
    if share >= NEAR_MISS_HELD or embed is None:
        return share
    return near_share(own_part(question), text_words, df, documents, embed)


def thresholds(options, config) -> tuple[float, float, float | None]:
    """(abstain margin, strict minimum, window below the best): the request's, else the index's."""
    margin, minimum, window = options.abstain_margin, options.rerank_min, options.rank_window
    if margin is None or minimum is None or window is not None:
        calibration = resources_for(config).calibration_for(options.labels)
        margin = calibration.abstain_margin if margin is None else margin
        minimum = calibration.rerank_min if minimum is None else minimum
        window = window * calibration.margin_unit if window is not None else None
    return margin, minimum, window


@timed("cap", stage="cap_results")
def cap(state: dict, config: RunnableConfig = None) -> dict:
    options = options_for(config)
    ranked = state.get("rerank_results") or []
    reason = ""
    kept = []
    closest_only = ""
    unknown = names_the_docs_lack(state, config) if ranked else []
    if unknown:
        reason = f"the follow-up names {', '.join(unknown)}, which no section of the docs mentions"
    elif ranked:
        margin, minimum, window = thresholds(options, config)
        best = ranked[0]["rerank_score"]
        sections = pool_scores(ranked, state.get("search_results") or [])
        stands_out = top_margin(sections)
        if stands_out < margin:
            reason = (f"the best score {best:.3f} stands {stands_out:.3f} above the median of the best "
                      f"{min(MARGIN_POOL, len(sections))} sections' scores; {margin:.3f} needed")
        else:
            floor = max(minimum, best - window) if window is not None else minimum
            kept = [c for c in ranked if c["rerank_score"] >= floor]
            if kept and window is not None:
                kept = reach_further(kept, ranked, max(minimum, best - SMALL_CONTEXT_WINDOW * window),
                                     options.max_chunks, options.context_token_budget)
            if not kept:
                reason = f"no candidate reaches the strict minimum {minimum:.3f} (best {best:.3f})"
        follow_up = options.closest_for_follow_ups and state.get("condensed_by") in ("rules", "model")
        if not kept and (follow_up or near_miss(stands_out, best, margin, minimum, options.partial_band)):
            within = [c for c in ranked if c["rerank_score"] >= best - window] if window is not None else []
            closest = within or ranked[:1]
            # a narrow miss whose closest sections hold little of what was asked is about
            # something else: the margin was missed by chance
            held = None
            if not follow_up:
                resources, question = resources_for(config), question_of(state)
                # words close in meaning only where the model reads the question as words, not letters
                fluent = reads_as_words(question, resources.token_counter)
                held = closest_hold(question, closest, resources.term_stats,
                                    resources.text_vectors.embed if fluent else None)
            if held is not None:
                reason += f"; the closest sections hold {held:.0%} of the question's weight"
            if held is None or held >= NEAR_MISS_HELD:
                kept, closest_only, reason = closest, reason, ""
    else:
        reason = "no candidate passed the similarity threshold"
    if options.dedupe:
        kept = drop_near_duplicates(kept)
    kept = at_most(kept, options.max_chunks, options.context_token_budget)
    below = subsections_below_cut(kept, ranked, options.max_chunks) if kept and options.use_reassembly else []
    abstain = not kept
    nearest = nearest_sections(ranked or state.get("search_results") or []) if abstain else []
    return {
        "cap_results": kept,
        "below_cut": below,
        "abstain": abstain,
        "abstain_reason": reason if abstain else "",
        "nearest": nearest,
        "unmentioned": unknown,
        "closest_only": closest_only,
    }
