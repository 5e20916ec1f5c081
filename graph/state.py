"""Typed state of the query graph.

`InputState` is what a caller hands in (a question, optionally the conversation it
belongs to); `QueryState` is everything the nodes read and write on the way to an
answer. Candidates are plain dicts: a chunk record (see `ingest.chunk.RECORD_FIELDS`)
plus the scores the pipeline adds (`similarity`, `rerank_score`).
"""
from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import NotRequired, TypedDict

Candidate = dict[str, Any]
"""A chunk record plus `similarity` (1 - cosine distance) and, after rerank, `rerank_score`."""


class ContextBlock(TypedDict):
    """One block of the final context, exactly as the generator reads it."""

    chunk_id: str
    group_id: str
    part_index: int
    part_count: int
    source: str
    heading_path: list[str]
    chunk_type: str
    content_kind: str
    text: str
    similarity: float | None
    rerank_score: float | None
    images: list[str]
    context_role: NotRequired[str]  # "parent_intro": a hit subsection's parent intro, placed before it;
    # "subsection": a subsection of a kept section that the cut left out, placed after it
    line_start: NotRequired[int]  # the source lines the block covers (for citations; not in result lines)
    line_end: NotRequired[int]
    reading: NotRequired[str]  # the text as the rendered page reads (ingest.dialects): quoted and scored
    page_title: NotRequired[str]  # the page's front matter title when it has no H1: the breadcrumb's first crumb


class Citation(TypedDict):
    """What an answer's marker [n] points at: context block n."""

    n: int
    chunk_id: str
    source: str
    heading_path: list[str]
    page_title: NotRequired[str]  # shown before heading_path when only the page's front matter titles it
    line_start: int | None
    line_end: int | None
    url: str


class CheckedSentence(TypedDict):
    """One sentence of the answer and how well the context supports it."""

    text: str
    citations: list[int]
    support: float
    kept: bool
    origin: str  # "evidence" (quoted verbatim) or "generated"
    flagged: NotRequired[bool]  # kept although unsupported (verify=flag)
    reason: NotRequired[str]  # why it was dropped or flagged


class SectionGap(TypedDict):
    """Parts of a split section left out because the context budget ran out."""

    group_id: str
    missing_parts: list[int]
    part_count: int


class InputState(TypedDict):
    question: str
    conversation_id: NotRequired[str | None]
    # Earlier turns a caller holds itself (an OpenAI-style message list), for a graph run
    # without a checkpointed thread; appended before this turn's question.
    messages: NotRequired[list[AnyMessage]]


class OutputState(TypedDict):
    question: str
    standalone_question: str
    intent: str
    abstain: bool
    coverage: str
    coverage_reason: str
    answer: str
    citations: list[Citation]
    sentences: list[CheckedSentence]
    context: list[ContextBlock]
    nearest: list[Candidate]
    stages: dict[str, list[str]]
    timings_ms: dict[str, float]


class QueryState(TypedDict):
    # --- input ------------------------------------------------------------------
    question: str
    conversation_id: NotRequired[str | None]
    # --- the conversation so far (kept across turns by the checkpointer) -----------
    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
    # --- condense: the question made standalone from the conversation (what retrieval reads) ---
    standalone_question: NotRequired[str]
    condensed_by: NotRequired[str]  # "none" (already standalone) | "rules" | "model"
    follow_up_page: NotRequired[str]  # the page the previous answer was drawn from, when the rules carried its topic
    # --- route --------------------------------------------------------------------
    intent: NotRequired[str]  # "screen" | "conceptual" | "ambiguous" (route's reading, then weigh_intent's)
    intent_confidence: NotRequired[float]
    intent_reason: NotRequired[str]
    intent_wording: NotRequired[float]  # route's cue margin, one of weigh_intent's three kinds of evidence
    # --- embed / search / filters ---------------------------------------------------
    query_vector: NotRequired[list[float]]
    search_results: NotRequired[list[Candidate]]
    threshold_results: NotRequired[list[Candidate]]
    rerank_results: NotRequired[list[Candidate]]
    cap_results: NotRequired[list[Candidate]]
    below_cut: NotRequired[list[Candidate]]  # subsections of kept sections the cut left out (reassemble adds them last)
    # --- reassemble -------------------------------------------------------------------
    context: NotRequired[list[ContextBlock]]
    gaps: NotRequired[list[SectionGap]]
    # --- evidence: the units quoted verbatim at the top of the answer ---------------------
    evidence: NotRequired[list[dict[str, Any]]]
    evidence_markdown: NotRequired[str]
    # --- coverage: whether the quotes answer what was asked ----------------------------------
    coverage: NotRequired[str]  # "covered" | "partial" | "not_covered" (the abstention)
    coverage_reason: NotRequired[str]  # why, in a few words
    coverage_signals: NotRequired[dict[str, Any]]  # what the verdict read (nodes/coverage.py)
    # --- prompt / generate ---------------------------------------------------------------
    prompt_messages: NotRequired[list[AnyMessage]]
    abstain: NotRequired[bool]
    abstain_reason: NotRequired[str]  # why cap abstained ("" when it did not)
    nearest: NotRequired[list[Candidate]]  # closest sections, named when abstaining
    unmentioned: NotRequired[list[str]]  # what a follow-up names that no chunk holds (cap abstains on it)
    closest_only: NotRequired[str]  # why a turn kept candidates none of which stood out enough (coverage: partial)
    answer: NotRequired[str]
    citations: NotRequired[list[Citation]]
    sentences: NotRequired[list[CheckedSentence]]
    # --- bookkeeping: chunk ids per stage and milliseconds per node (this turn only) ---
    stages: NotRequired[dict[str, list[str]]]
    timings_ms: NotRequired[dict[str, float]]


def question_of(state: dict) -> str:
    """The question retrieval and the answer steps work on: the standalone one when a follow-up
    was condensed (see nodes/condense.py), else the question as asked."""
    return state.get("standalone_question") or state["question"]
