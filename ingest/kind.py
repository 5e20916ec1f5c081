"""`content_kind`: does a chunk describe a UI screen (`screen`) or a concept/workflow (`prose`)?

Decided at ingest from evidence in the chunk, and the deciding reason is kept:
1. Front matter `content_kind: screen|prose` (or `fieldguide_kind`) overrides everything.
2. Otherwise points are added up, and 3 or more points make it `screen`:
   - a screenshot (Markdown image or `<img>`): 2
   - a table whose header names fields, options, buttons, columns, menus or settings: 2
   - UI vocabulary (button, field, tab, menu, screen, click, dialog, …) per 100 words:
     at least 1.5 → 1, at least 3 → 2, at least 5 → 3 (and at least two such words, so one
     "page" in a short intro decides nothing)
   - a heading that names a screen-like thing (screen, page, dialog, tab, menu, settings, …): 1
   - two or more short bold labels (`**Save**`), or labels of UI components as the dialect pass
     reads them (`:icon{title="Field Width Button"}` reads `[Field Width Button]`), next to some UI
     vocabulary: 1
The text decided on is the chunk's reading (`ingest.dialects`), so a component that stands for a
button counts as the button it shows.
"""
from __future__ import annotations

import re

from fieldguide.headings import heading_label

UI_WORDS = (
    "button", "buttons", "click", "clicks", "clicking", "clicked", "tap", "field", "fields", "tab", "tabs",
    "menu", "menus", "screen", "screens", "dropdown", "drop-down", "checkbox", "checkboxes", "toggle",
    "dialog", "modal", "sidebar", "panel", "icon", "icons", "toolbar", "column", "columns", "popup",
    "pop-up", "window", "page", "header", "input", "textbox", "select", "selected", "settings",
    "hover", "right-click", "scroll", "widget", "card", "form", "dashboard", "view", "slider",
)
HEADING_WORDS = ("screen", "page", "dialog", "tab", "menu", "settings", "view", "window", "sidebar",
                 "toolbar", "form", "panel", "dashboard", "field", "fields", "button", "buttons")
TABLE_HEADER_WORDS = ("field", "option", "button", "column", "menu", "setting", "control", "label", "input")

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_LOWER_WORD = re.compile(r"[a-z][a-z'-]*")
_UI = frozenset(UI_WORDS)
_IMAGE = re.compile(r"!\[[^\]]*\]\(|<img\b", re.IGNORECASE)
_BOLD = re.compile(r"\*\*([^*\n]{1,40})\*\*")
# A component's label as the dialect pass reads it: `[Save]`, not a link, an image or a task box.
_FENCE_LINE = re.compile(r"^\s*(?:```|~~~).*$", re.MULTILINE)  # `bash [npm]` names a code tab, no control
_COMPONENT_LABEL = re.compile(r"(?<![!\]\\])\[([^\[\]\n]{2,40})\](?![(\[:])")


def _field_table(text: str) -> bool:
    if "|" not in text:  # no row to look at: skip the line by line pass
        return False
    lines = text.split("\n")
    for index in range(len(lines) - 1):
        row, rule = lines[index].strip(), lines[index + 1].strip()
        if row.startswith("|") and set(rule) <= set("|-: ") and "-" in rule:
            header = row.lower()
            if any(word in header for word in TABLE_HEADER_WORDS):
                return True
    return False


def decide_content_kind(text: str, heading_path: list[str], front_matter: dict) -> tuple[str, str]:
    """Returns (kind, reason)."""
    override = front_matter.get("content_kind") or front_matter.get("fieldguide_kind")
    if isinstance(override, str) and override.strip().lower() in ("screen", "prose"):
        return override.strip().lower(), "front matter override"
    words = _LOWER_WORD.findall(text.lower())
    ui_hits = [w for w in words if w in _UI]
    density = 100.0 * len(ui_hits) / max(len(words), 1)
    score = 0
    reasons = []
    if ("![" in text or "<" in text) and _IMAGE.search(text):  # substring tests first: much cheaper
        score += 2
        reasons.append("screenshot")
    if _field_table(text):
        score += 2
        reasons.append("field/option table")
    if density >= 1.5 and len(ui_hits) >= 2:
        points = 3 if density >= 5 else 2 if density >= 3 else 1
        score += points
        sample = ", ".join(sorted(set(ui_hits))[:5])
        reasons.append(f"UI words {density:.1f}/100 ({sample})")
    if heading_path:
        heading_words = {w.lower() for w in _WORD.findall(heading_label(heading_path[-1]))}
        if heading_words & set(HEADING_WORDS):
            score += 1
            reasons.append("screen-like heading")
    # Bold labels only count next to UI words: without any, they are not looked for.
    labels = _COMPONENT_LABEL.findall(_FENCE_LINE.sub("", text)) if ui_hits and "[" in text else []
    bold = [b for b in _BOLD.findall(text) + labels if len(b.split()) <= 4] if ui_hits else []
    if len(bold) >= 2:
        score += 1
        reasons.append(f"{len(bold)} bold UI labels")
    kind = "screen" if score >= 3 else "prose"
    return kind, f"score {score}: " + ("; ".join(reasons) if reasons else "no UI evidence")
