"""coverage: whether the quoted evidence answers the question — `covered`, `partial` or `not_covered`.

`cap` abstains when nothing stands out of the question's candidates: that turn is
`not_covered`. A follow-up whose candidates do not stand out, and a question that missed the
thresholds narrowly, keep the closest of them instead (`closest_only`): that turn is `partial`
unless its quotes stand for the question as well as a covered turn's must (`turn_verdict`), or the
chat model, when asked, reads them as answering it. Every turn with quotes is judged, since quotes
always look like an answer: do they stand for what was asked? Its signals (`Signals`), all read against the
quoted units rather than the whole context:

* `found`: the share of the question's weight that the quoted units hold (their text, table
  header and the breadcrumb of their block), each content word of the standalone question's
  own part (a carried topic left out) weighed by its idf in the index: "Can I pay for a
  booking with cryptocurrency?" turns on "cryptocurrency", not on "booking"; a word no chunk
  holds weighs nothing when it stands only in a sentence that tells the reader's story
  (`story_words`: "My wife typed the wrong password …");
* `near`: `found`, with each word the quotes lack credited by how close in meaning the nearest
  word they hold is (`fieldguide.near_words`): "photo" stands for "image", "colour" for "color", "sizes"
  for "size" (which the light stemmer keeps apart); "theme" is not met by "design", nor
  "depreciate" by "monetary". The verdict reads `near`, `found` is kept for the reason;
* `semantic`: the best cosine between the question and a quoted unit;
* `standout`: how far the best candidate stood above its pool, in the index's abstain margins
  (`cap` abstains below 1; the calibration's probes set the unit);
* `names`: names the reader writes (`fieldguide.names`) that no chunk of the index holds, in the
  sentences that ask (`asks`): "We're a German company. Why does the order of tax rules matter?"
  names the reader's setting, not what the docs are asked about; and name phrases ("Google Maps")
  that no section search found holds, though the docs hold each of their words;
* `unknown` / `unknown_words`: the question's words no chunk holds (the preface names one);
* `figure` / `figure_held`: the kind of figure the question asks for ("How long are old logs
  kept?": a duration; `fieldguide.quantities`) and whether the quotes hold one.

`verdict`: a turn whose question names what no chunk holds is `partial`, and so is one that asks
for a figure the quotes do not hold: the logging section that says where the logs go names "logs"
and "kept", not for how long (over thirteen sets, three unanswerable second turns and no answerable
turn; docs/benchmarks/coverage.md, "Questions that ask for a figure"). Otherwise its
`grounding` = near + 0.8·semantic + 0.3·ln(standout) must reach 1.02, less 0.05 for each content
word of the question past 11 (`needed`: a long question holds the reader's own story). The weights and the
threshold were chosen on six documentation sets (questions and two-turn conversations together),
never on single questions: the most honest answers on the mean over the sets with no more false
flags than before (docs/benchmarks/coverage.md). Each signal alone separates a set's unanswerable
questions from its answerable ones only partly (readers bring words the docs never use to
questions the docs answer), and together they still do not everywhere: on the six sets honest_ok
is 0.5-1.0 at a mean false_flag of 0.13; most false flags are answers whose quotes indeed lack
the facts.

A `partial` answer opens with `partial_preface` ("The docs do not answer whether you can pay
with cryptocurrency. Here is what they have that is closest:"), written by `generate` before the
quotes.

With `coverage_judge` on and an OpenAI-compatible endpoint configured, the chat model is
asked too (`prompts/coverage.md`): its "no" makes a covered turn `partial`, its "yes" a
partial one `covered` (not one that names what the docs never hold). Its quality cannot be
measured offline (no capable model runs here); it is off by default.
"""
from __future__ import annotations

import logging
import math
import re
from dataclasses import asdict, dataclass, field, replace

from langchain_core.runnables import RunnableConfig

from fieldguide.calibration import top_margin
from fieldguide.content_words import idf_of, question_sentences, question_words, stem
from fieldguide.headings import heading_labels
from fieldguide.names import unknown_name_phrases, unknown_names
from fieldguide.near_words import stand_ins
from fieldguide.quantities import AMOUNT, COUNT, DURATION, FREQUENCY, asked_figure, holds_figure
from fieldguide.words import words
from graph.options import options_for
from graph.resources import resources_for
from graph.timing import timed
from ingest.tokens import reads_as_words
from nodes.condense import own_part
from nodes.evidence import embedding_text
from nodes.quotable import Unit

log = logging.getLogger("fieldguide.coverage")

COVERED, PARTIAL, NOT_COVERED = "covered", "partial", "not_covered"
VERDICTS = (COVERED, PARTIAL, NOT_COVERED)


@dataclass
class Signals:
    """What the verdict reads (see the module doc)."""

    found: float = 1.0
    missing: list[str] = field(default_factory=list)
    missing_idf: float = 0.0
    missing_close: float = 1.0
    names: list[str] = field(default_factory=list)
    standout: float | None = None
    semantic: float | None = None  # best cosine between the question and a quoted unit
    judge: str | None = None  # the chat model's reply, when asked: "yes", "no" or "unclear"
    unknown: float = 0.0  # share of the question's weight on words no chunk of the index holds
    unknown_words: list[str] = field(default_factory=list)  # those words
    above_floor: float | None = None  # the best score above the index's strict minimum, in abstain margins
    similarity: float | None = None  # cosine of the question to the best reranked candidate
    words: int = 0  # content words of the question weighed
    near: float | None = None  # `found` with lacking words credited by the closest quoted word
    stand_ins: dict[str, str] = field(default_factory=dict)  # a lacking word -> the quoted word credited for it
    figure: str | None = None  # the kind of figure the question asks for (`fieldguide.quantities`), if any
    figure_held: bool = True  # whether the quotes hold a figure of that kind

    def to_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def quoted_text(evidence: list[dict], blocks: list[dict]) -> str:
    """The text of the quoted units, their table headers and the breadcrumbs of their blocks."""
    parts = []
    for unit in evidence:
        parts += [unit.get("text") or "", unit.get("header") or ""]
        n = int(unit.get("n") or 0)
        if 0 < n <= len(blocks):
            parts.append(" ".join(heading_labels(blocks[n - 1].get("heading_path"))))
    return "\n".join(parts)


# benchmarks/tune_coverage.py measures `near` on every turn, so that other weights can be replayed
MEASURING = {"near_always": False}


def signals(question: str, evidence: list[dict], blocks: list[dict], document_frequency: dict[str, int] | None,
            documents: int, embed=None, unit_vectors=None, standout: float | None = None,
            question_vector=None, settled=None, searched: list[str] | None = None) -> Signals:
    """The signals of one answered turn. `embed(texts) -> vectors` and `unit_vectors` (of the
    quoted units, in order) give `missing_close`; without them it is left at 1.0 (no evidence
    against the quotes). `embed` also gives `near`, unless `settled(signals)` says the verdict
    does not depend on it (`settled_without_near`): a word embedded is time before the first token.
    `searched`: the texts of the sections search found, where a name phrase the question uses
    would stand if the docs held it (`fieldguide.names.unknown_name_phrases`)."""
    own_text = own_part(question)
    asked = " ".join(asks(own_text))
    own = question_words(own_text) or question_words(question)
    if not own:
        return Signals(standout=standout)
    weights = {w: idf_of(w, document_frequency, documents) for w in own}
    top = idf_of("\u2400", document_frequency, documents)  # a word no chunk holds: the largest idf
    if document_frequency is not None and documents > 0:
        weights.update({w: 0.0 for w in story_words(asked, weights, top)})
    text = quoted_text(evidence, blocks)
    quoted = set(words(text))
    held = {stem(w) for w in quoted}
    found = {w for w in own if stem(w) in held or w in held}
    total = sum(weights.values()) or 1.0
    # the weightiest first; of words equally rare in the docs (often: in none of them), the longer,
    # as words are rarer the longer they are ("cryptocurrency" before "pay")
    missing = sorted((w for w in own if w not in found), key=lambda w: (-weights[w], -len(w)))
    close, semantic = 1.0, None
    if unit_vectors is not None and len(unit_vectors):
        if missing and embed is not None:
            close = best_cosine(embed([missing[0]])[0], unit_vectors)
        if question_vector is not None:
            semantic = best_cosine(question_vector, unit_vectors)
    # which words no chunk holds is known only from the index's statistics
    known = document_frequency is not None and documents > 0
    unheld = [w for w in own if weights[w] >= top] if known else []
    measured = Signals(found=sum(weights[w] for w in found) / total, missing=missing,
                       unknown=sum(weights[w] for w in unheld) / total, unknown_words=unheld,
                       missing_idf=weights[missing[0]] / top if missing and known else 0.0,
                       missing_close=close,
                       names=names_lacking(asked, document_frequency, documents, searched or []),
                       standout=standout, semantic=semantic, words=len(own))
    if figure := asked_figure(own_text):
        measured.figure, measured.figure_held = figure, holds_figure(figure, text)
    if embed is not None and evidence and not (settled is not None and settled(measured)):
        credited = stand_ins(missing, quoted, embed)
        measured.near = measured.found + sum(weights[w] * c for w, (_, c) in credited.items()) / total
        measured.stand_ins = {w: quoted_word for w, (quoted_word, _) in credited.items()}
        # a word with a close stand-in in the quotes after those with none
        measured.missing = sorted(missing, key=lambda w: w in credited)
    return measured


def names_lacking(asked: str, document_frequency, documents: int, searched: list[str]) -> list[str]:
    """The names the asking sentences use that no chunk holds, then the name phrases ("Google
    Maps") that no searched section holds although it holds their words, unless one of their words
    is named already."""
    names = unknown_names(asked, document_frequency)
    phrases = unknown_name_phrases(asked, searched, document_frequency, documents)
    return names + [p for p in phrases if not set(p.split()) & set(names)]


def story_words(asked: str, weights: dict[str, float], top: float) -> list[str]:
    """The weighed words (`weights`) that stand in no sentence that asks (`asked`: those sentences,
    `asks`) and that no chunk of the docs holds (weight `top`), so in the reader's story: "My wife
    typed the wrong password too many times. How do I unlock her login?" tells of a wife the docs
    never name, and asks what they do answer. They weigh nothing (docs/benchmarks/coverage.md,
    "Two more held-out sets, figures, brand names, the reader's story"). A word no chunk holds in
    the sentence that asks ("Can I get a refund?") weighs most, as before."""
    asking = set(question_words(asked))
    return [w for w, weight in weights.items() if weight >= top and w not in asking]


def asks(question: str) -> list[str]:
    """The sentences of a question that ask (end with "?"); all of them when none does. The others
    say where the reader stands ("We're a German company.", "My NAS runs the backups."): what they
    name is their setting, not what they ask the docs about."""
    sentences = question_sentences(question)
    return [s for s in sentences if s.rstrip().endswith("?")] or sentences


def searched_texts(state: dict) -> list[str]:
    """The texts of the sections search found for the turn, and of its context."""
    found = (state.get("search_results") or []) + (state.get("context") or [])
    return [c.get("text") or "" for c in found]


def best_cosine(vector, vectors) -> float:
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32)
    query = np.asarray(vector, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
    return float(np.max(matrix @ query / np.where(norms == 0, 1.0, norms)))


# The verdict's weights and threshold (see `verdict`), chosen on the mean over every question set
# (benchmarks/tune_coverage.py; docs/BENCHMARKS.md, "Coverage").
THRESHOLDS = {"semantic_weight": 0.8, "standout_weight": 0.3, "threshold": 1.02, "long_question": 11,
              "length_credit": 0.05}


def needed(s: Signals, threshold: float, long_question: float, length_credit: float) -> float:
    """The grounding a turn needs: `threshold`, less `length_credit` for each content word of the
    question past `long_question`. A reader who tells their setting before they ask ("My wife typed
    the wrong password too many times and now her login is blocked. How do I unlock it?") brings
    words no quote of the right answer holds, and the share the quotes hold falls with every one:
    over twelve sets, answerable questions of 14 content words or more were flagged 0.21 of the time,
    those of 8 to 10 0.12, while 59 of 61 unanswerable ones have fewer than 14
    (docs/benchmarks/coverage.md, "Two more held-out sets, long questions, ...")."""
    return threshold - length_credit * max(0, s.words - long_question)


def grounding(s: Signals, semantic_weight: float, standout_weight: float) -> float:
    """How well the quotes stand for the question: the weighted share of its words they hold (or words
    close in meaning: `near`; `found` for signals recorded without it), their
    embedding closeness to it, and how far the best candidate stood out (log of the abstain margins).
    The share of its weight on words no chunk holds (`unknown`) added nothing on the mean over the
    sets once these were in: readers bring their own words to questions the docs answer."""
    standout = math.log(max(s.standout, 0.05)) if s.standout is not None else 0.0
    semantic = s.semantic if s.semantic is not None else 0.0
    held = s.near if s.near is not None else s.found
    return held + semantic_weight * semantic + standout_weight * standout


def settled_without_near(s: Signals) -> bool:
    """Whether the verdict is the same whatever `near` comes to: it lies between `found` (no word the
    quotes lack has a stand-in) and 1 (every one has a close one), and grounding rises with it. Four
    turns in five are settled so (the grounding of `found` passes the threshold, or that of a full
    share does not), and embed no word."""
    if s.names or not s.figure_held:
        return True
    t = THRESHOLDS
    low = grounding(replace(s, near=s.found), t["semantic_weight"], t["standout_weight"])
    high = grounding(replace(s, near=1.0), t["semantic_weight"], t["standout_weight"])
    bar = needed(s, t["threshold"], t["long_question"], t["length_credit"])
    return low >= bar or high < bar


def always(_: Signals) -> bool:
    return True


# How a reason and a preface say what a figure question asks (`fieldguide.quantities`): words the
# question itself holds, so the preface adds nothing a check of invented words would count.
ASKS_FOR = {DURATION: "how long", COUNT: "how many", AMOUNT: "how much", FREQUENCY: "how often"}


def verdict(s: Signals, **overrides: float) -> tuple[str, str]:
    """(coverage, reason) of a turn that was answered with quotes: `partial` when the question names
    what no chunk of the docs holds, when it asks for a figure the quotes do not hold, or when the
    quotes stand for it too little (`grounding` under the threshold); `covered` otherwise."""
    t = {**THRESHOLDS, **overrides}
    if s.names:
        return PARTIAL, "the docs never name " + ", ".join(s.names)
    if not s.figure_held:
        return PARTIAL, f"the question asks {ASKS_FOR[s.figure]}, and the quotes hold no {s.figure}"
    score = grounding(s, t["semantic_weight"], t["standout_weight"])
    bar = needed(s, t["threshold"], t["long_question"], t["length_credit"])
    held = f"the quotes hold {s.found:.0%} of the question's weight"
    if s.near is not None and f"{s.near:.0%}" != f"{s.found:.0%}":
        held += f" ({s.near:.0%} with words close in meaning)"
    if score < bar:
        lacking = f"; they lack \u201c{s.missing[0]}\u201d" if s.missing and s.missing[0] not in s.stand_ins else ""
        return PARTIAL, f"{held}{lacking} (grounding {score:.2f}, {bar:.2f} needed)"
    return COVERED, f"{held} (grounding {score:.2f})"


def turn_verdict(s: Signals, closest_only: str = "", asked: str = "question", **overrides: float) -> tuple[str, str]:
    """`verdict`, for a turn `cap` kept for its closest candidates too (`closest_only` says why):
    `partial`, unless its quotes stand for the question as well as a covered turn's must. Over ten
    sets, of 33 such turns the 10 whose grounding passed the threshold were all answerable, and the
    unanswerable ones stayed below 0.8 (docs/benchmarks/coverage.md, "Closest candidates that
    answer")."""
    result, reason = verdict(s, **overrides)
    if not closest_only:
        return result, reason
    if result == COVERED:
        return COVERED, f"{reason}, though nothing stood out ({closest_only})"
    return PARTIAL, f"nothing stands out for this {asked} ({closest_only})"


JUDGE_TOKENS = 3


def is_endpoint(chat_provider: str | None) -> bool:
    return (chat_provider or "local").lower() == "openai"


def judge_with_model(model, question: str, blocks: list[dict], config) -> str:
    """The chat model's own reading: "yes" (the excerpts answer the question), "no", or "unclear"
    (any other reply, or the endpoint failing: the offline verdict then stands alone)."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from prompts.loader import coverage_system_prompt, user_message

    messages = [SystemMessage(content=coverage_system_prompt()), HumanMessage(content=user_message(question, blocks))]
    try:
        bound = model.bind(max_tokens=JUDGE_TOKENS, temperature=0.0) if hasattr(model, "bind") else model
        reply = bound.invoke(messages, config)
    except Exception as exc:  # the endpoint is down: the answer still comes, judged offline
        log.warning("the coverage judge failed (%s); the offline verdict stands", exc)
        return "unclear"
    text = reply.content if isinstance(reply.content, str) else str(reply.content)
    first = (words(text) or [""])[0]
    return first if first in ("yes", "no") else "unclear"


def with_judgement(result: str, reason: str, s: Signals) -> tuple[str, str]:
    """The offline verdict with the model's reading added: its "no" makes a covered answer partial; its
    "yes" makes a partial one covered, unless the question names what no chunk of the docs holds."""
    if s.judge == "no" and result == COVERED:
        return PARTIAL, "the chat model read the context as not answering the question"
    if s.judge == "yes" and result == PARTIAL and not s.names:
        return COVERED, "the chat model read the context as answering the question (" + reason + ")"
    return result, reason


def standing(state: dict, config) -> tuple[float | None, float | None, float | None]:
    """(how far the best candidate stood above its pool, as `cap` measured it, and how far above the
    strict minimum, both in the index's abstain margins; the best candidate's cosine)."""
    from nodes.cap import pool_scores, thresholds

    ranked = state.get("rerank_results") or []
    if not ranked:
        return None, None, None
    margin, minimum, _ = thresholds(options_for(config), config)
    stands_out = top_margin(pool_scores(ranked, state.get("search_results") or []))
    if margin <= 0:
        return None, None, float(ranked[0]["similarity"])
    return stands_out / margin, (float(ranked[0]["rerank_score"]) - minimum) / margin, float(ranked[0]["similarity"])


@timed("coverage")
def coverage(state: dict, config: RunnableConfig = None) -> dict:
    if state.get("abstain"):
        result, reason = NOT_COVERED, state.get("abstain_reason") or "nothing in the docs stands out"
        found = Signals()
    else:
        resources = resources_for(config)
        stats = resources.term_stats
        blocks = state.get("context") or []
        evidence = state.get("evidence") or []
        embed = resources.text_vectors.embed
        # the texts the evidence step embedded, so the vectors come from its cache
        unit_vectors = embed([embedding_text(Unit(u["n"] - 1, 0, u["kind"], u["text"], 0, u.get("label") or "",
                                                  u.get("header") or "")) for u in evidence]) if evidence else []
        standout, above_floor, similarity = standing(state, config)
        question = state.get("standalone_question") or state["question"]
        if not reads_as_words(question, resources.token_counter):
            settled = always  # the model reads the question's script as letters: no word is near another
        else:
            settled = None if MEASURING["near_always"] else settled_without_near
        found = signals(question, evidence, blocks, stats.document_frequency if stats else None,
                        stats.documents if stats else 0, embed, unit_vectors, standout, state.get("query_vector"),
                        settled=settled, searched=searched_texts(state))
        found.above_floor, found.similarity = above_floor, similarity
        asked = "follow-up" if state.get("condensed_by") in ("rules", "model") else "question"
        result, reason = turn_verdict(found, state.get("closest_only") or "", asked)
        options = options_for(config)
        if options.coverage_judge and is_endpoint(resources.settings.chat_provider) and blocks:
            found.judge = judge_with_model(resources.chat_model, state.get("standalone_question")
                                           or state["question"], blocks, config)
            result, reason = with_judgement(result, reason, found)
    return {"coverage": result, "coverage_reason": reason, "coverage_signals": found.to_dict()}


# --- what the reader reads first when the verdict is partial --------------------------------

_YES_NO = re.compile(r"^(?:(?:so|and|but|also|ok|okay),?\s+)?(can|could|may|might|should|will|would|must|do|did)\s+"
                     r"(i|we)\s+(.+?)[?.!\s]*$", re.IGNORECASE)
_THERE = re.compile(r"^(?:(?:so|and|but|also|ok|okay),?\s+)?(is|are)\s+there\s+(.+?)[?.!\s]*$", re.IGNORECASE)
_PERSON = {"i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself", "we": "you", "us": "you",
           "our": "your", "ours": "yours", "i'm": "you're", "i've": "you've", "i'd": "you'd", "i'll": "you'll"}
_WORD_TOKEN = re.compile(r"[A-Za-z']+")


def _second_person(text: str) -> str:
    return _WORD_TOKEN.sub(lambda m: _PERSON.get(m.group(0).lower(), m.group(0)), text)


def whether_clause(question: str) -> str | None:
    """"Can I pay by card?" as "whether you can pay by card"; None for a question not asked that
    simply (yes/no questions of the reader's own doing, and "is there ...")."""
    text = " ".join(own_part(question).split())
    if "?" in text.rstrip("?"):  # two questions in one: no single clause says both
        return None
    if m := _YES_NO.match(text):
        aux, rest = m.group(1).lower(), _second_person(m.group(3))
        return f"whether you {rest}" if aux in ("do", "did") else f"whether you {aux} {rest}"
    if m := _THERE.match(text):
        return f"whether there {m.group(1).lower()} {_second_person(m.group(2))}"
    return None


# Plain words, nearly all of them ones a reader's question and the quotes need not share: the
# preface adds one claim ("the docs do not answer this") and no content the docs lack, so it
# never reads, to a check of invented words, as something made up.
CLOSEST = "Here is what they have that is closest:"


def partial_preface(question: str, signals: dict | None) -> str:
    """The sentence a partial answer opens with: what the docs do not answer, then that the quotes
    below are only the closest they have."""
    signals = signals or {}
    names = list(signals.get("names") or [])
    if names:
        named = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
        return f"The docs do not have {named} in any section, so they may not answer this question. {CLOSEST}"
    if signals.get("figure") in ASKS_FOR and signals.get("figure_held") is False:
        return f"The docs may not answer {ASKS_FOR[signals['figure']]}. {CLOSEST}"
    clause = whether_clause(question)
    if clause:
        return f"The docs do not answer {clause}. {CLOSEST}"
    unheld = list(signals.get("unknown_words") or [])
    # One word of the question no chunk holds: that is what the docs lack. A word the quotes lack
    # but the docs hold is not named: on answerable questions it is as often the reader's own
    # ("suddenly", "land") as what they asked about.
    if len(unheld) == 1:
        return (f"The docs do not have \u201c{unheld[0]}\u201d in any section, so they may not answer this "
                f"question. {CLOSEST}")
    return f"The docs may not answer this question. {CLOSEST}"
