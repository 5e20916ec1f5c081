"""generate: the answer, streamed: the quoted evidence first, then the model's checked sentences.

1. The evidence (`nodes.evidence`, chosen as soon as retrieval ended) is written to the
   stream at once: verbatim quotes with their citation markers. The reader has the facts
   before the model has read its prompt.
2. The model streams through LangChain's `astream`, so every token reaches LangGraph's
   `messages` stream (and `astream_events`, LangServe and LangGraph Studio). Its text is cut
   into sentences as they complete and each is checked against the context
   (`nodes.check`); what reaches the reader depends on `verify`: `drop` writes supported
   sentences only (and stops the model once `MAX_DROPPED_IN_A_ROW` sentences in a row were
   left out: it has left the context behind, and the reader would only wait for its end),
   `flag` writes every sentence and marks unsupported ones with "⚠", `off` writes tokens as
   they come (markers that name no block are still removed).
3. The final state carries the answer, its `citations` (every marker resolved to a block's
   source, heading path, lines and URL) and its `sentences` with their support.

The reader's text is written to the `custom` stream as `{"token": text}`: the service and
`fieldguide ask` read that one. When nothing survived the filters the model is not called:
the answer says plainly that the documentation does not cover the question and names the
nearest sections.
"""
from __future__ import annotations

import contextlib

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import StreamWriter

from fieldguide.chat import bind_generation_options
from fieldguide.content_words import terms
from fieldguide.headings import breadcrumb
from graph.options import options_for
from graph.resources import resources_for
from graph.timing import timed
from nodes.check import SentenceChecker, SentenceStream
from nodes.citations import MarkerFilter, cited_numbers, citations_for
from nodes.coverage import PARTIAL, partial_preface
from nodes.evidence import embedding_text
from nodes.quotable import context_units

FLAG = "⚠"
# With `verify` drop, the model is stopped after this many sentences in a row were left out:
# on the answer lines of both development corpora and a held-out docs set, no sentence the
# check kept after such a run carried a key fact, and half of the small local model's
# sentences came after one (docs/BENCHMARKS.md, "The local model stopped after three
# sentences in a row left out").
MAX_DROPPED_IN_A_ROW = 3
NOTHING_TO_QUOTE = "The sections found for this question do not state an answer plainly; see the sources."


def abstain_message(nearest: list[dict], unmentioned: list[str] = ()) -> str:
    """What the reader reads when the turn abstains: what the docs do not cover (the names the
    question uses that no section holds, when that is why) and where the closest sections are."""
    if unmentioned:
        named = ", ".join(unmentioned[:-1]) + f" or {unmentioned[-1]}" if len(unmentioned) > 1 else unmentioned[0]
        text = f"The documentation does not mention {named}, so I can't answer this from the docs."
    else:
        text = "The documentation does not cover this question, so I can't answer it from the docs."
    if nearest:
        names = [f"\"{breadcrumb(n['heading_path'], page_title=n.get('page_title')) or n['source']}\" ({n['source']})"
                 for n in nearest]
        text += " The closest sections are " + ", ".join(names) + "."
    return text


def _nowhere(_chunk) -> None:
    """The stream writer of a call outside a graph run."""


def evidence_sentences(evidence: list[dict]) -> list[dict]:
    """The quoted units, as sentences of the answer: verbatim, so fully supported by their block."""
    return [{"text": unit["text"], "citations": [unit["n"]], "support": 1.0, "kept": True, "origin": "evidence"}
            for unit in evidence]


class AnswerWriter:
    """Assembles the reader's text and writes each new piece to the stream."""

    def __init__(self, writer):
        self.writer = writer
        self.parts: list[str] = []
        self.pending_break = ""
        self._flowing = False

    def write(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.writer({"token": text})

    def sentence(self, text: str, following: str) -> None:
        """A checked sentence, after the break that followed the previous one."""
        separator = self.pending_break if self.parts else ""
        self.write(separator + text)
        self.pending_break = following or " "

    def flow(self, text: str) -> None:
        """Model text as it comes (verify=off); the break after the evidence goes before its first piece."""
        if self._flowing:
            self.write(text)
        elif text.strip():
            self._flowing = True
            self.write((self.pending_break if self.parts else "") + text.lstrip())

    @property
    def text(self) -> str:
        return "".join(self.parts).strip()


@timed("generate")
async def generate(state: dict, config: RunnableConfig = None, writer: StreamWriter = _nowhere) -> dict:
    if state.get("abstain") or not state.get("prompt_messages"):
        answer = abstain_message(state.get("nearest") or [], state.get("unmentioned") or [])
        # streamed like any answer: a client that renders tokens shows it as they come
        AnswerWriter(writer).write(answer)
        return {"answer": answer, "citations": [], "sentences": [], "messages": [AIMessage(content=answer)]}
    blocks = state.get("context") or []
    options = options_for(config)
    resources = resources_for(config)
    out = AnswerWriter(writer)
    evidence = state.get("evidence") or []
    if state.get("coverage") == PARTIAL:  # said first, before any quote, so no reader misses it
        out.write(partial_preface(state.get("standalone_question") or state["question"],
                                  state.get("coverage_signals")))
        out.pending_break = "\n\n"
    if state.get("evidence_markdown"):
        out.write(out.pending_break if out.parts else "")
        out.write(state["evidence_markdown"])
        out.pending_break = "\n\n"
    units = context_units(blocks)
    vectors = resources.text_vectors.embed([embedding_text(u) for u in units]) if units else []
    checker = SentenceChecker(blocks, units, vectors, state.get("standalone_question") or state["question"],
                              resources.text_vectors.embed_one, options.verify, options.min_support)
    for unit in evidence:  # the quoted units count as said: a sentence repeating them adds nothing
        checker.said.append(terms(unit["text"]))
    sentences = evidence_sentences(evidence)
    stream, markers = SentenceStream(), MarkerFilter(len(blocks))
    model = bind_generation_options(resources.chat_model, options.max_answer_tokens, options.temperature)

    dropped_in_a_row = 0

    def judge(pieces) -> None:
        nonlocal dropped_in_a_row
        for text, following in pieces:
            verdict = checker.check(text)
            sentences.append(verdict.record())
            dropped_in_a_row = dropped_in_a_row + 1 if options.verify == "drop" and not verdict.kept else 0
            if dropped_in_a_row >= MAX_DROPPED_IN_A_ROW:
                return
            if options.verify != "off" and verdict.kept and verdict.text:
                out.sentence(f"{FLAG} {verdict.text}" if verdict.flagged else verdict.text, following)

    async with contextlib.aclosing(model.astream(state["prompt_messages"], config)) as chunks:
        async for chunk in chunks:
            text = chunk.content if isinstance(chunk.content, str) else str(chunk.content)
            if not text:
                continue
            if options.verify == "off":
                out.flow(markers.feed(text))
            judge(stream.feed(text))
            if dropped_in_a_row >= MAX_DROPPED_IN_A_ROW:
                break  # closing the stream stops the model: what it writes now is left out too
    if dropped_in_a_row < MAX_DROPPED_IN_A_ROW:
        judge(stream.close())
    if options.verify == "off":
        out.flow(markers.close())
    answer = out.text or NOTHING_TO_QUOTE
    return {
        "answer": answer,
        "citations": citations_for(cited_numbers(answer), blocks, resources.settings.source_url_template),
        "sentences": sentences,
        "messages": [AIMessage(content=answer)],
    }
