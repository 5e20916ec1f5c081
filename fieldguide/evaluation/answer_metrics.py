"""Answer metrics: what the reader gets, scored from answer lines (`fieldguide ask --batch`).

Questions are single questions or two-turn conversations (`{"id", "turns": [...]}`, turn k
scored against the answer line "<id>#<k>"). Over answerable turns unless said otherwise:

* answer_facts_all   share whose key facts ALL occur in the answer (an abstention misses)
* answer_facts_soft  mean share of key facts found in the answer
* context_facts_all  share whose key facts all occur in the context the generator read
* carry              answer_facts_all / context_facts_all
* grounded_words     share of the answers' content words found in their context or question
* invented           share of spoken answers with 3 or more distinct content words found in neither
* cited              share of spoken answers with a marker [n] that names a context block
* bad_citations      share of markers that name no context block
* answer_words       median content words per spoken answer
* abstain_ok         share of UNANSWERABLE turns abstained on
* false_abstain      share of answerable turns abstained on
* honest_ok          share of UNANSWERABLE turns whose coverage is not "covered" (the reader is told
                     the docs may not say; a line without coverage reads from its abstain)
* false_flag         share of answerable turns whose coverage is not "covered"
* first_token_ms     median of timings_ms.first_token

Facts are matched like retrieval's (`metrics.normalise`). Content words are words of three
letters or more outside a fixed list of function words, compared by a light stem.
"""
from __future__ import annotations

import re
import statistics

from fieldguide.evaluation.metrics import normalise
from fieldguide.headings import heading_labels
from fieldguide.retrieval import coverage_of  # a line without a verdict (an older run) reads from its abstain

ANSWER_METRICS = ("answer_facts_all", "answer_facts_soft", "context_facts_all", "carry", "grounded_words",
                  "invented", "cited", "bad_citations", "answer_words", "abstain_ok", "false_abstain",
                  "honest_ok", "false_flag", "first_token_ms")
_CITE = re.compile(r"\[(\d{1,3})\]")
_WORD = re.compile(r"[a-z][a-z0-9'-]{2,}")
FUNCTION_WORDS = frozenset("""about above after again against all also and any are because been before being below
between both but can cannot could did does doing done down during each either else ever every few for from further
had has have having her here hers him his how however into its itself just may might more most much must neither nor
not now off once only other ought our ours out over own same she should since some such than that the their theirs
them then there these they this those through too under until upon very was were what when where whether which while
who whom whose why will with within without would you your yours yourself documentation docs section sections
excerpt excerpts answer question questions following use using used one two make sure able shall per via like get
got let lets see""".split())


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(normalise(_CITE.sub(" ", text or ""))) if w not in FUNCTION_WORDS]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def turns_of(questions: list[dict]) -> list[dict]:
    """Single questions as they are; each turn of a conversation as an item with id "<id>#<k>"."""
    items = []
    for q in questions:
        if "turns" in q:
            for k, turn in enumerate(q["turns"], 1):
                items.append({**turn, "id": f"{q['id']}#{k}", "turn": k, "answerable": turn.get("answerable", True)})
        else:
            items.append({**q, "turn": 1, "answerable": q.get("answerable", True)})
    return items


def _context_text(answer: dict) -> str:
    return "\n".join(" ".join(heading_labels(b.get("heading_path"))) + "\n" + (b.get("text") or "")
                     for b in answer.get("context") or [])


def _share(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def score_answers(items: list[dict], lines: list[dict]) -> dict:
    """The metrics of the module doc for answer lines against turns (`turns_of`)."""
    answers = {a["id"]: a for a in lines if "id" in a}
    answerable = [q for q in items if q["answerable"]]
    facts_all, facts_soft, facts_context = [], [], []
    for q in answerable:
        a = answers.get(q["id"]) or {}
        text, context = normalise(a.get("answer", "")), normalise(_context_text(a))
        facts = [normalise(f) for f in q.get("key_facts") or []]
        found = [f in text for f in facts] if not a.get("abstain") else [False] * len(facts)
        facts_all.append(bool(facts) and all(found))
        facts_soft.append(sum(found) / len(facts) if facts else 0.0)
        facts_context.append(bool(facts) and all(f in context for f in facts))
    spoken, markers, bad = [], 0, 0
    for q in items:
        a = answers.get(q["id"])
        if not a or a.get("abstain") or not (a.get("answer") or "").strip():
            continue
        known = {_stem(w) for w in content_words(_context_text(a) + " " + q.get("question", ""))}
        words = content_words(a["answer"])
        numbers = {int(n) for n in _CITE.findall(a["answer"])}
        valid = {c.get("n") for c in a.get("citations") or [] if c.get("n") is not None} \
            or set(range(1, len(a.get("context") or []) + 1))
        markers += len(numbers)
        bad += len(numbers - valid)
        spoken.append({"words": len(words), "new": len({w for w in words if _stem(w) not in known}),
                       "cited": bool(numbers & valid)})
    first = [a["timings_ms"]["first_token"] for a in (answers.get(q["id"]) or {} for q in items)
             if isinstance(a.get("timings_ms"), dict) and a["timings_ms"].get("first_token") is not None]
    fa, fc = _share(facts_all), _share(facts_context)
    return {
        "turns": len(items),
        "answer_facts_all": fa,
        "answer_facts_soft": round(statistics.mean(facts_soft), 3) if facts_soft else None,
        "context_facts_all": fc,
        "carry": round(fa / fc, 3) if fa is not None and fc else None,
        "grounded_words": round(1 - sum(s["new"] for s in spoken) / max(1, sum(s["words"] for s in spoken)), 3)
        if spoken else None,
        "invented": _share([s["new"] >= 3 for s in spoken]),
        "cited": _share([s["cited"] for s in spoken]),
        "bad_citations": round(bad / markers, 3) if markers else None,
        "answer_words": statistics.median([s["words"] for s in spoken]) if spoken else None,
        "abstain_ok": _share([bool((answers.get(q["id"]) or {}).get("abstain")) for q in items if not q["answerable"]]),
        "false_abstain": _share([bool((answers.get(q["id"]) or {}).get("abstain")) for q in answerable]),
        "honest_ok": _share([coverage_of(answers.get(q["id"]) or {}) != "covered" for q in items if not q["answerable"]]),
        "false_flag": _share([coverage_of(answers.get(q["id"]) or {}) != "covered" for q in answerable]),
        "first_token_ms": round(statistics.median(first), 1) if first else None,
    }
