"""route: a first reading of the question's intent from its wording alone.

A transparent rule-based reading of English question forms (no vocabulary of one product):

* screen cues: asking *where* something is; naming a UI element (button, field, tab,
  menu, screen, page, dialog, toggle, column, icon, setting ...); UI actions (click,
  tap, select, switch/turn on, toggle, drag); procedural "how do I / how can I /
  is there a way to ..." questions, which documentation answers with steps on screen; and
  asking for one named setting ("which variable", "which config key", "what flag do I pass",
  "is there a command"), which a configuration reference answers as a web app's docs name
  the field.
* conceptual cues: *why* (as a question), *what happens*, *what is the difference*, *how
  does/is ... work or differ*, *should I*, *do I need*, *is there a downside*, "can
  <product> automatically ...", yes/no questions about behaviour; and naming an operations
  topic (installing, upgrading, a container, a config file, an environment variable, the
  database, a backup, a server, LDAP/SAML, an API): "how do I" about those asks for commands
  and configuration, which no screen of the product shows. Measured on six doc sets nobody
  tuned for (docs/BENCHMARKS.md, "Docs-site dialects"), most such questions were labelled
  conceptual, whatever their "how do I"; asking for a named setting weighs more (docs/TUNING.md,
  "Routing"). A reader reporting that something went wrong ("what am I doing wrong?", "is
  it broken?", "isn't it supposed to ...?") asks how it works.

Each cue adds its weight to one side; the opening clause weighs 1.5x. The margin (screen
minus conceptual) goes into the state as `intent_wording`: `weigh_intent` combines it with
what the embedding and the candidates show once they are known, and decides. The intent
written here (a small margin is `ambiguous`) is what `search` sees; a question in another
language, or without any cue, has margin 0 here and is decided by the other evidence.
Confidence = 0.5 + 0.5·tanh(|margin| / 2).
"""
from __future__ import annotations

import math
import re

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig

from graph.options import options_for
from graph.state import question_of
from graph.timing import timed

UI_NOUNS = (
    r"button|buttons|field|fields|tab|tabs|menu|menus|screen|screens|page|pages|dialog|modal|window|"
    r"toggle|toggles|checkbox|check box|dropdown|drop-down|drop down|icon|icons|sidebar|side bar|toolbar|"
    r"column|columns|header|panel|pane|setting|settings|preferences|editor|form|link|option|options|"
    r"switch|slider|badge|banner|popup|pop-up|view|tooltip|list|row|cell"
)
UI_VERBS = (
    r"click\w*|tap|taps|tapped|tapping|press|pressing|select|selecting|drag\w*|toggle|toggling|"
    r"switch (?:on|off)|turn (?:on|off)|hover\w*|right-click\w*|double-click\w*|scroll\w*"
)

# Setting a product up and running it: documentation answers these with commands and configuration.
OPERATIONS_TOPICS = (
    r"command line|cli|terminal|shell|docker|compose|container|containers|kubernetes|helm|"
    r"environment variables?|env vars?|config(?:uration)? files?|yaml|database|postgres\w*|sqlite|mysql|"
    r"server|cron|install\w*|upgrad\w*|migrat\w*|s3|bucket|ldap|saml|oidc|oauth|api|webhooks?|smtp|tls|ntp|"
    r"log files?|backups?|restore|reverse proxy|nginx|traefik|apt|repository|package"
)

# What a configuration reference or a command line names where a web app has buttons and fields:
# "which variable", "which config key", "what flag do I pass" ask for one named control.
NAMED_SETTINGS = (
    r"variables?|keys?|flags?|parameters?|params?|commands?|endpoints?|ports?|hostnames?|directives?|"
    r"propert(?:y|ies)|env vars?|arguments?"
)

SCREEN_CUES: list[tuple[str, float, str]] = [
    (r"\bwhere\b", 2.0, "asks where"),
    # "which setting", and "which cookie setting", "which profile option": a named control of one part
    (rf"\bwhich (?:[\w-]+ ){{0,2}}(?:{UI_NOUNS})\b|\bwhich one do i\b", 2.0,
     "asks which UI element"),
    # asking for a named setting outweighs naming the operations topic it belongs to
    (rf"\bwhich (?:[\w.-]+ ){{0,3}}(?:{NAMED_SETTINGS})\b"
     rf"|\bwhat (?:[\w.-]+ ){{0,2}}(?:{NAMED_SETTINGS}|settings?|options?) (?:do|should|must|can|would) (?:i|we)\b"
     rf"|\bis there (?:a|an|one) (?:[\w.-]+ ){{0,2}}(?:{NAMED_SETTINGS}|settings?|options?)\b", 3.0,
     "asks which named setting"),
    (rf"\b(?:{UI_VERBS})\b", 1.0, "UI action"),
    (rf"\b(?:{UI_NOUNS})\b", 1.0, "names a UI element"),
    # any task after "how do I": asking for steps, which documentation gives on screen
    (r"\b(?:how (?:do|can|would|should) (?:i|you|we)|how to|is there (?:a|an) (?:\w+ )?way to)\s+(?!know\b|tell\b|understand\b)\w",
     2.0, "procedural how-to"),
    (r"\b(?:on|in|from) the [\w\- ]{0,30}(?:screen|page|tab|menu|dialog|sidebar|editor)\b", 1.0, "locates a screen"),
    (r"\bhow can i tell\b", 1.0, "asks what the UI shows"),
]
CONCEPTUAL_CUES: list[tuple[str, float, str]] = [
    # "why" that asks (opening a sentence, or before a verb), not "... so they know why the ..."
    (r"(?:^|[.?!;:,]\s*|\band\s+|\bbut\s+)why\b|\bwhy (?:is|are|was|were|does|do|did|can|can't|cannot|could|would|"
     r"will|won't|isn't|aren't|wasn't|doesn't|don't|didn't|has|have|hasn't|haven't|should|shouldn't|not)\b",
     3.0, "asks why"),
    (r"\bwhat happens\b|\bwhat (?:will|would) happen\b", 2.5, "asks what happens"),
    (r"\bdifference\b|\bdifferent from\b|\bcompared? (?:to|with)\b|\bvs\.?\b|\bversus\b", 2.5, "asks for a difference"),
    (r"\bhow (?:does|do|is|are) (?:the |a |an |my )?[\w\- ]{1,40}\b(?:work|works|differ|different|calculated|decided|handled|divided|split)\b",
     2.5, "asks how something works"),
    # a reader reporting that something went wrong asks how it works, not where a control is
    (r"\bwhat am i doing wrong\b|\b(?:is|are) (?:the|it|this|that|my) (?:[\w-]+ ){0,2}broken\b"
     r"|\b(?:isn't|aren't|wasn't) (?:[\w-]+ ){0,3}supposed to\b", 2.0, "asks what went wrong"),
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
    (rf"\b(?:{OPERATIONS_TOPICS})\b", 2.0, "names an operations topic"),
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


def wording_margin(question: str) -> tuple[float, list[str]]:
    """(screen cue weight minus conceptual cue weight, the cues found) for a question."""
    text = " ".join(question.lower().split())
    reasons: list[str] = []
    end = _CLAUSE_END.search(text)
    lead_end = end.start() if end else len(text)
    screen = _score(text, SCREEN_CUES, "screen", lead_end, reasons)
    conceptual = _score(text, CONCEPTUAL_CUES, "conceptual", lead_end, reasons)
    return screen - conceptual, reasons


def classify(question: str) -> tuple[str, float, str]:
    """Return (intent, confidence, reason) for a question, from its wording alone."""
    return decide(*wording_margin(question))


def decide(margin: float, reasons: list[str]) -> tuple[str, float, str]:
    if abs(margin) < AMBIGUOUS_MARGIN:
        intent = "ambiguous"
    else:
        intent = "screen" if margin > 0 else "conceptual"
    confidence = round(0.5 + 0.5 * math.tanh(abs(margin) / 2.0), 3)
    if intent == "ambiguous":
        confidence = round(1.0 - confidence, 3) if margin else 0.5
    return intent, confidence, "; ".join(reasons) or "no cue"


@timed("route")
def route(state: dict, config: RunnableConfig = None) -> dict:
    if options_for(config).use_routing:
        margin, reasons = wording_margin(question_of(state))
        intent, confidence, reason = decide(margin, reasons)
    else:  # switched off (ablation): every question alike, conceptual prompt, no screen steering
        margin, (intent, confidence, reason) = 0.0, ("conceptual", 0.5, "routing off")
    return {
        "intent": intent,
        "intent_confidence": confidence,
        "intent_reason": reason,
        "intent_wording": margin,
        "messages": [HumanMessage(content=state["question"])],
    }
