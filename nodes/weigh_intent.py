"""weigh_intent: decide the question's intent once its candidates are known.

Three kinds of evidence, each independent of any one product's vocabulary, are added up:

* wording: `route`'s cue margin (English question forms; 0 for other languages);
* examples: how much nearer the question's vector lies to the mean of generic screen
  questions than to the mean of generic conceptual ones (`graph.intent_examples`, embedded
  with the index's own model, so a multilingual model carries it to other languages). It
  counts only when the model reads the question as words: an English model cuts Cyrillic
  into letters (6-8 tokens a word against 1.0-1.4 for English questions), and the vector of
  letters says nothing about the question's form (`FLUENT_TOKENS_PER_WORD`);
* candidates: the similarity-weighted share of screen chunks among the `CANDIDATES` best
  reranked chunks, minus the index's own share of screen chunks (its calibration): a
  question about a screen finds screen descriptions more often than the docs hold them.
  Reranked, because the scorer's lexical part reads any script;
* the docs themselves: the log-odds of the index's screen share (clipped to
  `BASE_RATE_CLIP`). Docs with few screen descriptions (a server's configuration reference)
  are asked few screen questions, and there the candidates cannot tell: none is a screen.
  Docs that are half screens add nothing.

    z = WORDING_WEIGHT·wording + EXAMPLE_WEIGHT·examples + CANDIDATE_WEIGHT·candidates
        + BASE_RATE_WEIGHT·logit(index screen share)

`screen` when z ≥ AMBIGUOUS_BAND, `conceptual` when z ≤ −AMBIGUOUS_BAND, else `ambiguous`.
There is no constant term: a question without evidence either way over docs half of whose
chunks describe screens is `ambiguous`, never one intent by default. The first three weights
are a logistic fit (no intercept) on the 80 labelled questions of both development corpora
(docs/TUNING.md, "Routing"); the base rate's was set on the mean over those and six unseen
doc sets (docs/BENCHMARKS.md, "Docs-site dialects"); z is the log-odds, and the confidence
its probability for the chosen side. The reason lists every term.
"""
from __future__ import annotations

import math

from langchain_core.runnables import RunnableConfig

from graph.intent_examples import unit_vector
from graph.options import options_for
from graph.resources import resources_for
from graph.state import question_of
from graph.timing import timed

WORDING_WEIGHT = 0.46
EXAMPLE_WEIGHT = 8.2
CANDIDATE_WEIGHT = 1.25
BASE_RATE_WEIGHT = 0.2
BASE_RATE_CLIP = 0.02  # a share of 0 (no screen chunk at all) counts as 2 %: the log-odds stay finite
AMBIGUOUS_BAND = 0.1
CANDIDATES = 3
FLUENT_TOKENS_PER_WORD = 3.0


def example_evidence(query_vector: list[float], prototypes: tuple[list[float], list[float]]) -> float:
    """cos(question, screen mean) − cos(question, conceptual mean)."""
    query = unit_vector(query_vector)
    screen, conceptual = prototypes
    return sum(q * s for q, s in zip(query, screen)) - sum(q * c for q, c in zip(query, conceptual))


def candidate_evidence(candidates: list[dict], screen_share: float) -> float:
    """Similarity-weighted screen share of the first CANDIDATES candidates (in the order given:
    the rerank's), minus the index's screen share."""
    best = candidates[:CANDIDATES]
    weights = [max(float(c["similarity"]), 0.0) for c in best]
    total = sum(weights)
    if not total:
        return 0.0
    share = sum(w for w, c in zip(weights, best) if c.get("content_kind") == "screen") / total
    return share - screen_share


def base_rate(screen_share: float | None) -> float:
    """The log-odds of the index's screen share, clipped to [BASE_RATE_CLIP, 1 - BASE_RATE_CLIP]
    (0 when the share is unknown)."""
    if screen_share is None:
        return 0.0
    share = min(max(float(screen_share), BASE_RATE_CLIP), 1.0 - BASE_RATE_CLIP)
    return math.log(share / (1.0 - share))


def weigh(wording: float, examples: float, candidates: float, prior: float = 0.0) -> tuple[str, float, float]:
    """(intent, confidence, z) from the kinds of evidence; `prior` is `base_rate` of the index."""
    z = (WORDING_WEIGHT * wording + EXAMPLE_WEIGHT * examples + CANDIDATE_WEIGHT * candidates
         + BASE_RATE_WEIGHT * prior)
    if abs(z) < AMBIGUOUS_BAND:
        return "ambiguous", round(0.5 + abs(z) / 2, 3), z
    return ("screen" if z > 0 else "conceptual"), round(1.0 / (1.0 + math.exp(-abs(z))), 3), z


def tokens_per_word(question: str, counter) -> float:
    """How many of the embedding model's tokens each word of the question costs."""
    from fieldguide.words import words

    found = words(question)
    return (counter.count_piece(question) - counter.special_tokens) / len(found) if found else 0.0


@timed("weigh_intent")
def weigh_intent(state: dict, config: RunnableConfig = None) -> dict:
    options = options_for(config)
    if not options.use_routing:  # switched off (ablation): route's conceptual stands
        return {}
    resources = resources_for(config)
    wording = float(state.get("intent_wording") or 0.0)
    cost = tokens_per_word(question_of(state), resources.token_counter)
    if cost <= FLUENT_TOKENS_PER_WORD:
        examples = example_evidence(state["query_vector"], resources.intent_prototypes)
        examples_note = f"cosine difference {examples:+.3f}"
    else:
        examples = 0.0
        examples_note = f"not counted: the model reads {cost:.1f} tokens a word"
    candidates = state.get("rerank_results") or state.get("search_results") or []
    calibration = resources.calibration_for(options.labels)
    # an empty index has no share of anything (its calibration says 0)
    index_share = calibration.screen_share if getattr(calibration, "chunks", 1) else None
    screen_share = (index_share or 0.0) if candidates else 0.0
    from_candidates = candidate_evidence(candidates, screen_share)
    prior = base_rate(index_share)
    intent, confidence, z = weigh(wording, examples, from_candidates, prior)
    reason = (f"z {z:+.2f}: wording {WORDING_WEIGHT * wording:+.2f} ({state.get('intent_reason') or 'no cue'}); "
              f"examples {EXAMPLE_WEIGHT * examples:+.2f} ({examples_note}); "
              f"candidates {CANDIDATE_WEIGHT * from_candidates:+.2f} (screen share of the best "
              f"{min(CANDIDATES, len(candidates))} {from_candidates + screen_share:.2f}, "
              f"index {screen_share:.2f}); docs {BASE_RATE_WEIGHT * prior:+.2f} (screen share of the index "
              f"{index_share if index_share is not None else 'unknown'})")
    return {"intent": intent, "intent_confidence": confidence, "intent_reason": reason}
