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
  Reranked, because the scorer's lexical part reads any script.

    z = WORDING_WEIGHT·wording + EXAMPLE_WEIGHT·examples + CANDIDATE_WEIGHT·candidates

`screen` when z ≥ AMBIGUOUS_BAND, `conceptual` when z ≤ −AMBIGUOUS_BAND, else `ambiguous`.
There is no constant term: a question without evidence either way is `ambiguous`, never one
intent by default. The weights are a logistic fit (no intercept) on the 80 labelled questions
of both development corpora (docs/TUNING.md, "Routing"); z is the log-odds, and the confidence
its probability for the chosen side. The reason lists every term.

The index's own screen share is no term of its own. As a base rate (the log-odds of the share,
weight 0.2) it read a configuration reference as docs asked few screen questions; over the six
sets measured since (200 questions), readers of such references ask for the setting to change
as readers of a web app ask for the button, and the base rate cost intent accuracy on the mean,
0.842 → 0.810 (docs/TUNING.md, "Routing").
"""
from __future__ import annotations

import math

from langchain_core.runnables import RunnableConfig

from graph.intent_examples import unit_vector
from graph.options import options_for
from graph.resources import resources_for
from graph.state import question_of
from graph.timing import timed
from ingest.tokens import FLUENT_TOKENS_PER_WORD, tokens_per_word

WORDING_WEIGHT = 0.46
EXAMPLE_WEIGHT = 8.2
CANDIDATE_WEIGHT = 1.25
AMBIGUOUS_BAND = 0.1
CANDIDATES = 3


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


def weigh(wording: float, examples: float, candidates: float) -> tuple[str, float, float]:
    """(intent, confidence, z) from the kinds of evidence."""
    z = WORDING_WEIGHT * wording + EXAMPLE_WEIGHT * examples + CANDIDATE_WEIGHT * candidates
    if abs(z) < AMBIGUOUS_BAND:
        return "ambiguous", round(0.5 + abs(z) / 2, 3), z
    return ("screen" if z > 0 else "conceptual"), round(1.0 / (1.0 + math.exp(-abs(z))), 3), z


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
    screen_share = float(calibration.screen_share or 0.0) if candidates else 0.0
    from_candidates = candidate_evidence(candidates, screen_share)
    intent, confidence, z = weigh(wording, examples, from_candidates)
    reason = (f"z {z:+.2f}: wording {WORDING_WEIGHT * wording:+.2f} ({state.get('intent_reason') or 'no cue'}); "
              f"examples {EXAMPLE_WEIGHT * examples:+.2f} ({examples_note}); "
              f"candidates {CANDIDATE_WEIGHT * from_candidates:+.2f} (screen share of the best "
              f"{min(CANDIDATES, len(candidates))} {from_candidates + screen_share:.2f}, "
              f"index {screen_share:.2f})")
    return {"intent": intent, "intent_confidence": confidence, "intent_reason": reason}
