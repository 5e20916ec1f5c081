"""condense: the question made standalone from the conversation, before retrieval reads it.

A follow-up ("And where do I turn it off?") leans on the turn before it; embedding it alone
finds nothing. This node opens every turn and writes `standalone_question`, which route,
embed, search, rerank, evidence and the check read instead of the raw question.

* `model`: the chat model rewrites the follow-up from the earlier questions
  (`prompts/condense.md`). A rewrite that is empty, runs over several lines, or keeps none
  of the follow-up's own terms is not trusted: the rules decide instead.
* `rules`, deterministic: a question that leans on the previous one (it opens with "And",
  "What about", ...; it points back with "it", "them", "that way", "the second kind", ...; it
  compares with one side named, "How is the manual option different?"; or it names almost
  nothing itself) gets the topic of the previous turn carried over, after " — about: ":
  the heading of the section the previous answer was drawn from, which names that topic
  in the docs' own words (the previous question's key terms when it had no answer, or only
  the closest candidates, none of which stood out), and the name of its page when that names
  something few chunks of the index mention (`page_name`).
  When the heading is carried, the page it is on goes into the state too (`follow_up_page`):
  the rerank leans on that page's sections (`nodes.rerank`). Any other question stands as asked. Carrying the previous question's own words instead drew
  retrieval back to the previous answer's section: follow-ups tend to move to a
  neighbouring one (docs/BENCHMARKS.md, "Follow-ups").
* `auto` (the default) is `model` when the chat model is an OpenAI-compatible endpoint and
  `rules` for the small local model. `off` never rewrites.

The first question of a conversation is always its own standalone question.
"""
from __future__ import annotations

import logging
import re

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from fieldguide.content_words import STOPWORDS, stem, terms
from fieldguide.headings import breadcrumb
from fieldguide.words import words
from graph.options import options_for
from graph.resources import resources_for
from graph.state import question_of
from graph.timing import timed
from prompts.loader import condense_message, load_prompt

log = logging.getLogger("fieldguide.condense")

CARRIED_TERMS = 8
MAX_REWRITE_CHARS = 400
REWRITE_TOKENS = 80
_OPENS_WITH_LINK = re.compile(
    r"^\W*(?:and|or|also|so|but|then|only|just|even|except|unless|ok(?:ay)?|nice|thanks|great|cool|what about|"
    r"how about|what if|and if|"
    r"same (?:for|with)|is that|does that|can that|will that|would that|why not)\b", re.IGNORECASE)
_POINTS_BACK = re.compile(
    r"\b(?:it|its|it's|itself|they|them|their|theirs|those|these|ones|there)\b|"
    r"\b(?:that|this) (?:way|one|option|setting|feature|button|menu|screen|page|field|step|case)\b|"
    r"\b(?:do|does|did|is|are|was|were|has|have|can|could|will|would|should|might|may|must|about|like|with|from|"
    r"for|of|on|in|into|under|to|use|using) (?:that|this)\b|"
    r"\b(?:that|this) (?!(?:the|a|an|my|your|our|their|his|her|its|it|i|you|we|they|he|she|there|is|was|"
    r"everyone|everybody|someone|somebody|anyone|anybody|nobody|people|all|each|one|none|week|month|year|day|"
    r"morning|evening|time|way)\b)[a-z]+[^s\W]\b|\bthough\b|"
    r"\b(?:that|this)\s*[?.!,]|\b(?:that|this) (?:on|off|up|down|back|out|away|again)\b|\bthe same\b|"
    r"\bone of (?:them|those|these)\b|\beach (?:one|of them|of those|of these)\b|"
    # "Can I also ...", "... by email instead": an addition to, or an alternative for, what the previous
    # turn was about ("instead of X" names both sides)
    r"\balso\b|\binstead\b(?! of\b)|"
    # "the most verbose one", "the other one", "the second kind": a choice among what the previous
    # answer listed ("the team one shared login" is a number, not a choice)
    r"\bthe (?:other|first|second|third|last|next|previous|same|new|old|default|[a-z]+est|(?:most|least) [a-z]+) "
    r"(?:one|kind|type|sort|mode|variant)\b(?![\w-])|\b(?:too|as well|either|then|instead|also)\s*[?.!]*\s*$|"
    # a comparison that names one side ("How is the manual option different?"): the other is what
    # the previous turn was about ("How are roles and policies different?" names both)
    r"^(?!.*\b(?:and|between|vs|versus|or|than|from)\b).*\b(?:different|differ|compare|better|worse)\s*[?.!]*\s*$",
    re.IGNORECASE)
# "Different thing: ...", "Unrelated, but ...": a new topic, said so ("Different thing on the same
# topic: ..." is not one)
_STARTS_AFRESH = re.compile(
    r"^\W*(?:(?:a |one )?(?:different|separate|unrelated|new|other|another)\s+(?:thing|question|topic|matter)|"
    r"unrelated|changing the subject|on (?:a|an) (?:different|unrelated|other) note)\b(?!.*\bsame (?:topic|page|thing)\b)"
    r"\s*[:,.;!?-]", re.IGNORECASE)
_THERE_IS = re.compile(r"\bthere (?:is|are|was|were|will|'s)\b|\b(?:is|are|was|were) there\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]+")
MIN_OWN_TERMS = 2  # a question naming fewer terms than this leans on the conversation
QUESTION_WORDS = frozenset("anyway anymore else instead please maybe possible".split())
ABOUT = " — about: "  # joins a follow-up to the topic carried over from the previous turn
# A page name is carried beside the heading only when its rarest word is in at most this share of
# the index's chunks: "logging", "ntp", "remediation sync" name a page; "budgeting", "accounts"
# name what the whole product is about, and carried along they make every section of that topic
# look alike (docs/BENCHMARKS.md, "Follow-ups on docs nobody tuned for").
PAGE_NAME_DF_SHARE = 0.02
_GENERIC_PAGES = frozenset("index readme intro introduction overview".split())
_NUMBER_PREFIX = re.compile(r"^\d+\s*")


def own_part(standalone: str) -> str:
    """A standalone question without the topic the rules carried over (the reader's own words)."""
    return standalone.split(ABOUT, 1)[0]


def own_words(state: dict) -> str | None:
    """A rules-condensed follow-up's own words (the question without its carried topic), else None:
    what the lexical parts of search and rerank read, while the carried topic steers the vector."""
    if state.get("condensed_by") != "rules":
        return None
    own = own_part(question_of(state)).strip()
    return own or None


def leans_on_previous(question: str) -> bool:
    """Whether a question can only be understood with the turn before it. One that says it starts
    afresh ("Different thing: ...", "Separate question: ...") stands as asked, whatever "it" it
    points to: that is within its own words (less its preface, `without_preface`)."""
    text = " ".join(question.split())
    if _STARTS_AFRESH.match(text):
        return False
    if _OPENS_WITH_LINK.match(text):
        return True
    if _POINTS_BACK.search(_THERE_IS.sub(" ", text)):
        return True
    return len(terms(text) - QUESTION_WORDS) < MIN_OWN_TERMS


def key_terms(previous: str, question: str, limit: int = CARRIED_TERMS) -> list[str]:
    """Words of the previous question that the new one does not already name, in order."""
    own = {stem(w.lower()) for w in _WORD.findall(question)}
    carried: list[str] = []
    seen: set[str] = set()
    for word in _WORD.findall(previous):
        lower = word.lower()
        key = stem(lower)
        if "'" in lower or lower in STOPWORDS or lower in QUESTION_WORDS or len(lower) < 3 or key in own \
                or key in seen:
            continue
        seen.add(key)
        carried.append(word)
        if len(carried) == limit:
            break
    return carried


def without_preface(question: str) -> str:
    """The question without a preface that says it starts afresh ("Separate question: are there
    ...?" is "are there ...?"): those words are about the conversation, not the docs, and weighed
    as the question's own they ask the quotes for "separate" and "question"."""
    match = _STARTS_AFRESH.match(question)
    rest = re.sub(r"^(?:but|and|so)\s+", "", question[match.end():].strip(), flags=re.IGNORECASE) if match else ""
    return rest if rest else question


def condense_by_rules(question: str, previous: str | None, topic: list[str] | None = None) -> tuple[str, str]:
    """(standalone question, how): the question itself, or it with the previous turn's topic:
    the headings `topic` of the section it was answered from (joined by " > "), else the previous
    question's key terms."""
    if not previous or not leans_on_previous(question):
        return without_preface(question), "none"
    about = breadcrumb(topic) if topic else " ".join(key_terms(previous, question))
    if not about:
        return question, "none"
    return f"{question.rstrip()}{ABOUT}{about}", "rules"


def trusted_rewrite(rewrite: str, question: str) -> str | None:
    """The model's rewrite, if it looks like one standalone question about the same thing."""
    text = (rewrite or "").strip().strip('"').strip()
    text = re.sub(r"^(?:standalone question|question)\s*:\s*", "", text, flags=re.IGNORECASE).strip()
    if not text or "\n" in text or len(text) > MAX_REWRITE_CHARS or not text.endswith("?"):
        return None  # not one question: an answer, an explanation, a list
    own = terms(question) - QUESTION_WORDS
    if own and not own & terms(text):
        return None
    return text


def earlier_questions(state: dict) -> list[str]:
    """This conversation's earlier questions (as asked), oldest first."""
    return [m.content for m in state.get("messages") or [] if isinstance(m, HumanMessage)
            and isinstance(m.content, str)]


def condense_with_model(model, history: list[str], question: str, config) -> str:
    messages = [SystemMessage(content=load_prompt("condense").rstrip("\n")),
                HumanMessage(content=condense_message(history, question))]
    bound = model.bind(max_tokens=REWRITE_TOKENS, temperature=0.0) if hasattr(model, "bind") else model
    reply = bound.invoke(messages, config)
    return reply.content if isinstance(reply.content, str) else str(reply.content)


def page_name(source: str) -> str:
    """What a page's file is called, as words: "02.content/4.import-export.md" is "import export",
    "console/remediation_sync.mdx" "remediation sync"; an index or readme page takes its folder's name."""
    parts = [p for p in (source or "").replace("\\", "/").split("/") if p]
    if not parts:
        return ""
    name = parts[-1].rsplit(".", 1)[0] if "." in parts[-1] else parts[-1]
    if name.lower() in _GENERIC_PAGES and len(parts) > 1:
        name = parts[-2]
    return _NUMBER_PREFIX.sub("", " ".join(re.split(r"[-_.\s]+", name))).strip()


def best_block(previous_context: list[dict]) -> dict | None:
    """The previous turn's best-ranked block (its context is still in the state), if any."""
    ranked = sorted((b for b in previous_context if b.get("rerank_score") is not None),
                    key=lambda b: -float(b["rerank_score"]))
    return ranked[0] if ranked else None


def answered_from(previous_context: list[dict], document_frequency=None, documents: int = 0) -> list[str]:
    """The topic of the previous turn's best-ranked block (its context is still in the state): the
    section's own heading, and its page's name when that is rare in the index.

    The headings above the section name its page too ("Booking form > Fields"), and carried
    along they pull retrieval back to that page, where "And what does it cost?" after a question
    on the Skipper field has its answer on the pricing page. But a section's own heading often
    names its topic only on its page: "How It Works", "Manual", an option called "level" under
    "Options" on a page whose title lives in its front matter. There the file's name says what the
    page is about ("remediation sync", "triggers", "logging"), and it is carried when few chunks
    of the index (`PAGE_NAME_DF_SHARE`) hold its rarest word; `document_frequency` (word -> chunks)
    and `documents` are the index's term statistics (no page name without them)."""
    best = best_block(previous_context)
    if best is None:
        return []
    topic = list(best.get("heading_path") or [])[-1:]
    page = page_name(best.get("source") or "")
    if page and document_frequency is not None and documents > 0 \
            and page.lower() not in breadcrumb(topic).lower():
        rarest = min((document_frequency.get(w, 0) for w in words(page.lower())), default=documents)
        if rarest <= PAGE_NAME_DF_SHARE * documents:
            topic.append(page)
    return topic


def uses_model(mode: str, chat_provider: str | None) -> bool:
    return mode == "model" or (mode == "auto" and (chat_provider or "local").lower() == "openai")


@timed("condense", opens_turn=True)
def condense(state: dict, config: RunnableConfig = None) -> dict:
    options = options_for(config)
    question = " ".join(state["question"].split())
    history = earlier_questions(state)
    previous = state.get("standalone_question") or (history[-1] if history else None)
    standalone, how, page = question, "none", ""
    if history and options.condense != "off":
        resources = resources_for(config)
        if uses_model(options.condense, resources.settings.chat_provider):
            try:
                rewrite = trusted_rewrite(condense_with_model(
                    resources.chat_model, history[-2:], question, config), question)
            except Exception as exc:  # the model is down: the rules still give retrieval a question
                log.warning("condensing with the chat model failed (%s); the rules decide", exc)
                rewrite = None
            if rewrite is not None:
                standalone, how = rewrite, "model"
        if how == "none":
            stats = resources.term_stats
            # a previous turn that kept only its closest candidates (nothing stood out) names its
            # topic no better than one that abstained: its question's key terms are carried
            topic = [] if state.get("closest_only") else answered_from(
                state.get("context") or [], stats.document_frequency if stats else None, stats.documents if stats else 0)
            standalone, how = condense_by_rules(question, previous, topic)
            if how == "rules" and topic:  # the previous answer's page: the rerank's prior (`nodes.rerank`)
                page = (best_block(state.get("context") or []) or {}).get("source") or ""
    return {"standalone_question": standalone, "condensed_by": how, "follow_up_page": page,
            "abstain": False, "answer": "", "citations": [],
            "sentences": [], "evidence": [], "evidence_markdown": ""}
