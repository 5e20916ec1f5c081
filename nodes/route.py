"""route: decide the question's intent (`screen`, `conceptual` or `ambiguous`) with a confidence.

A transparent rule-based classifier over the wording of the question only, so it
carries over to any product's documentation (no vocabulary of one product):

* screen cues: asking *where* something is; naming a UI element (button, field, tab,
  menu, screen, page, dialog, toggle, column, icon, settings ...); UI actions (click,
  tap, select, switch/turn on, toggle, drag); and procedural "how do I / how can I /
  is there a way to <verb>" questions, which documentation answers with steps on screen.
* conceptual cues: *why*, *what happens*, *what is the difference*, *how does/is ... work
  or differ*, *should I*, *do I need*, *is there a downside*, *what would I miss*,
  "can <product> automatically ...", "does it carry over", yes/no questions about behaviour.

Each cue adds its weight to one side; the margin decides. A small margin (or no cue at
all) is `ambiguous`: the conceptual prompt, with screen chunks also searched.
Confidence = 0.5 + 0.5·tanh(|margin| / 2).
"""
from __future__ import annotations

import math
import re

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig

from graph.runtime import Stopwatch, options_for, question_of, with_timing

UI_NOUNS = (
    r"button|buttons|field|fields|tab|tabs|menu|menus|screen|screens|page|pages|dialog|modal|window|"
    r"toggle|toggles|checkbox|check box|dropdown|drop-down|drop down|icon|icons|sidebar|side bar|toolbar|"
    r"column|columns|header|panel|pane|settings|preferences|editor|form|link|option|options|"
    r"switch|slider|badge|banner|popup|pop-up|view|tooltip|list|row|cell"
)
UI_VERBS = (
    r"click\w*|tap|taps|tapped|tapping|press|pressing|select|selecting|drag\w*|toggle|toggling|"
    r"switch (?:on|off)|turn (?:on|off)|hover\w*|right-click\w*|double-click\w*|scroll\w*"
)
ACTION_VERBS = (
    r"add|create|make|set|set up|change|edit|rename|delete|remove|hide|unhide|show|see|view|find|open|close|"
    r"save|load|import|export|enter|reset|turn|switch|enable|disable|combine|merge|move|link|unlink|"
    r"fill|sort|filter|search|select|undo|restore|reconcile|attach|upload|lock|unlock|archive|"
    r"customi[sz]e|configure|give|assign|copy|duplicate|print|split|mark|tag|pin|collapse|expand"
)

SCREEN_CUES: list[tuple[str, float, str]] = [
    (r"\bwhere\b", 2.0, "asks where"),
    (rf"\bwhich (?:{UI_NOUNS}|one do i|buttons? do i)\b", 2.0, "asks which UI element"),
    (rf"\b(?:{UI_VERBS})\b", 1.0, "UI action"),
    (rf"\b(?:{UI_NOUNS})\b", 1.0, "names a UI element"),
    (rf"\b(?:how (?:do|can|would|should) (?:i|you|we)|how to|is there (?:a|an) (?:\w+ )?way to)\s+(?:\w+\s+)?(?:{ACTION_VERBS})\b",
     2.0, "procedural how-to"),
    (r"\b(?:on|in|from) the [\w\- ]{0,30}(?:screen|page|tab|menu|dialog|sidebar|editor)\b", 1.0, "locates a screen"),
    (r"\bhow can i tell\b", 1.0, "asks what the UI shows"),
]
CONCEPTUAL_CUES: list[tuple[str, float, str]] = [
    (r"\bwhy\b", 3.0, "asks why"),
    (r"\bwhat happens\b|\bwhat (?:will|would) happen\b", 2.5, "asks what happens"),
    (r"\bdifference\b|\bdifferent from\b|\bcompared? (?:to|with)\b|\bvs\.?\b|\bversus\b", 2.5, "asks for a difference"),
    (r"\bhow (?:does|do|is|are) (?:the |a |an |my )?[\w\- ]{1,40}\b(?:work|works|differ|different|calculated|decided|handled|divided|split)\b",
     2.5, "asks how something works"),
    (r"\bshould i\b|\bdo i (?:really )?(?:need|have to)\b|\bis it (?:safe|possible|worth)\b", 2.0, "asks for advice"),
    (r"\bdownside|\bupside|\bbenefits?\b|\badvantages?\b|\bdisadvantages?\b|\brisks?\b|\btrade-?offs?\b", 2.0, "asks about consequences"),
    (r"\bwhat (?:is|are|does|do) [\w\- ]{1,40}\b(?:mean|means)\b|\bwhat (?:is|are)\b", 1.5, "asks what something is"),
    (r"\b(?:does|can|will) (?:\w+ ){0,2}(?:support|connect|integrate|sync|work with|allow|handle)\b", 2.0,
     "asks about a capability"),
    (r"\bwhat would i (?:miss|lose)\b|\bwhat changes\b|\bwhich one wins\b|\bwhich one survives\b", 2.0, "asks about outcome"),
    (r"\b(?:can|does|will|is) (?:it|this|that|the app|actual|[a-z]+) (?:automatically|still|ever|also)\b", 1.5, "asks about behaviour"),
    (r"\b(?:when|if) i\b", 1.0, "describes a situation"),
    (r"\bwill (?:that|this|it|they)\b|\bdoes (?:that|this|it|unspent|the)\b", 1.0, "asks about behaviour"),
    (r"\bconfused\b|\bunderstand\b|\bexplain\b|\bconcept\b", 1.5, "asks for an explanation"),
    (r"\bcan i (?:put|use|keep|run|connect|publish|share|have)\b", 1.0, "asks what is possible"),
]

AMBIGUOUS_MARGIN = 0.75
# The opening clause usually carries what is really asked ("Where is X, and what happens
# when ..."): cues found there weigh more.
LEAD_WEIGHT = 1.5
_CLAUSE_END = re.compile(r"[?.;]|, and\b|, or\b|, but\b")


def _score(text: str, cues: list[tuple[str, float, str]], side: str, lead_end: int,
           reasons: list[str]) -> float:
    total = 0.0
    for pattern, weight, reason in cues:
        match = re.search(pattern, text)
        if match:
            if match.start() < lead_end:
                weight *= LEAD_WEIGHT
            total += weight
            reasons.append(f"+{weight:g} {side}: {reason}")
    return total


def classify(question: str) -> tuple[str, float, str]:
    """Return (intent, confidence, reason) for a question."""
    text = " ".join(question.lower().split())
    reasons: list[str] = []
    end = _CLAUSE_END.search(text)
    lead_end = end.start() if end else len(text)
    screen = _score(text, SCREEN_CUES, "screen", lead_end, reasons)
    conceptual = _score(text, CONCEPTUAL_CUES, "conceptual", lead_end, reasons)
    margin = screen - conceptual
    if abs(margin) < AMBIGUOUS_MARGIN:
        intent = "ambiguous"
    else:
        intent = "screen" if margin > 0 else "conceptual"
    confidence = round(0.5 + 0.5 * math.tanh(abs(margin) / 2.0), 3)
    if intent == "ambiguous":
        confidence = round(1.0 - confidence, 3) if margin else 0.5
    return intent, confidence, "; ".join(reasons) or "no cue"


def route(state: dict, config: RunnableConfig = None) -> dict:
    routing = options_for(config).use_routing
    with Stopwatch() as sw:
        if routing:
            intent, confidence, reason = classify(question_of(state))
        else:  # switched off (ablation): every question alike, conceptual prompt, no screen steering
            intent, confidence, reason = "conceptual", 0.5, "routing off"
    return {
        "intent": intent,
        "intent_confidence": confidence,
        "intent_reason": reason,
        "messages": [HumanMessage(content=state["question"])],
        "timings_ms": with_timing(state, "route", sw.ms),
    }
