"""The constructs' syntax (patterns) and the small readings every family shares: marks, attributes, labels."""
from __future__ import annotations

import re

# Admonition types folded onto the three marks a reader tells apart.
_TIP_TYPES = frozenset({"tip", "tips", "hint", "success", "check", "done", "good"})
_WARNING_TYPES = frozenset({"warning", "warn", "caution", "attention", "danger", "error", "failure", "fail",
                            "missing", "bug", "alert", "important", "critical", "negative", "red", "orange",
                            "amber", "yellow"})
_NOTE_TYPES = frozenset({"note", "notes", "info", "abstract", "summary", "tldr", "todo", "example", "quote", "cite",
                         "question", "help", "faq", "secondary", "callout", "notice", "primary", "neutral",
                         "admonition", "information", "blue", "default"})
ADMONITION_TYPES = _TIP_TYPES | _WARNING_TYPES | _NOTE_TYPES
# Attributes whose value is what a reader sees of a component, in order of preference.
_LABEL_ATTRIBUTES = ("title", "label", "text", "alt", "summary", "caption", "heading", "name")
# Components that only arrange their children: their tags disappear (an opening tag with a
# title or label still shows it).
_INCLUDE_NAMES = frozenset({"partial", "include", "include_relative", "readfile", "snippet", "content",
                            "includemarkdown", "include-markdown", "embed", "readfile-md"})
# A backtick fence's info string holds no backtick (CommonMark): "```{{x}}```." is a code span.
_FENCE = re.compile(r"^ {0,3}(`{3,}(?=[^`]*$)|~{3,})")
_ATTR = re.compile(r"""([:\w.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|\{["'`]?([^}"'`]*)["'`]?\}|([^\s"'>}]+))""")
_POSITIONAL = re.compile(r"""(?:^|\s)(?:"([^"]*)"|'([^']*)'|([^\s"'=]+))(?=\s|$)""")
# a list item's marker and the spaces after it (CommonMark: its content starts after them)
_LIST_ITEM = re.compile(r" *([-*+]|\d{1,9}[.)])( +)(?=\S)")
# MkDocs / Material
_MK_ADMONITION = re.compile(r"^(!!!|\?\?\?\+?)\s*([\w-]+)((?:\s+[\w-]+)*)\s*(?:\"(.*)\")?\s*$")
_MK_TAB = re.compile(r"^===\+?\s+\"(.*)\"\s*$")
_MK_SNIPPET = re.compile(r"^-{1,2}8<-{1,2}\s*(?:\"([^\"]*)\"|'([^']*)'|(\S+))?\s*$")
_MK_ICON = re.compile(r":(?:material|octicons|fontawesome|simple|fontawesome-solid|fontawesome-regular)-[\w-]+:"
                      r"(?:\{[^}\n]*\})?")
_MK_ABBREVIATION = re.compile(r"^\*\[[^\]]+\]:\s")
# an attribute list at the end of a heading or paragraph line (`## Usage { #usage }`, `{#footer}`,
# `{ id="9.7" data-toc-label="9.7" }`), or alone on its line (`{ .annotate }`): the page shows none
_TRAILING_ATTRS = re.compile(r"(?:(?<=\S)\s+|^\s*)\{:?\s*(?:[.#][\w-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]+))"
                             r"(?:\s+(?:[.#][\w-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]+)))*\s*\}\s*$")
# a code span: HTML comments in one are text (no site shows a comment outside one;
# MkDocs Material's `<!-- md:version -->` macros draw a badge)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_ATTR_LIST = re.compile(r"(?<=[)\]*_`])\{:?\s*(?:[.#][\w-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]+))"
                        r"(?:\s+(?:[.#][\w-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]+)))*\s*\}")
# Docusaurus / MDX
_IMPORT = re.compile(r"^import\s+(?:[\w*{}\s,]+\s+from\s+)?['\"][^'\"]+['\"];?\s*$")
_IMPORT_MARKDOWN = re.compile(r"^import\s+(\w+)\s+from\s+['\"]([^'\"]+\.mdx?)['\"]")
_IMPORT_OPEN = re.compile(r"^import\s+(?:type\s+)?\{[^}]*$")
_IMPORT_CLOSE = re.compile(r"\}\s*from\s+['\"][^'\"]+['\"];?\s*$")
_EXPORT = re.compile(r"^export\s+(?:default\s+|const\s+|let\s+|var\s+|function\s+|async\s+|\{)")
_MDX_COMMENT = re.compile(r"\{/\*.*?\*/\}")
_COLON_OPEN = re.compile(r"^(:{2,})\s*([A-Za-z][\w-]*)(?:\[([^\]]*)\])?(\{[^\n]*\})?\s*(.*?)\s*$")
_COLON_CLOSE = re.compile(r"^(:{2,})\s*$")
_JSX_LINE = re.compile(r"^<(/?)([A-Z][\w.]*)((?:\s[^<>]*?)?)\s*(/?)>\s*$")
_JSX_OPEN_START = re.compile(r"^<([A-Z][\w.]*)(\s[^<>]*)?$")
_JSX_INLINE_SELF = re.compile(r"<([A-Z][\w.]*)((?:\s[^<>]*?)?)\s*/>")
_JSX_INLINE_TAG = re.compile(r"</?([A-Z][\w.]*)((?:\s[^<>]*?)?)\s*>")
# Nuxt MDC
_MDC_INLINE = re.compile(r"(?<![\w:\\/])(:[A-Za-z][\w-]*)(?:\[([^\]\n]*)\])?(\{[^}\n]*\})?")
_MDC_SLOT = re.compile(r"^#[A-Za-z][\w-]*\s*$")
_BOLD_LINE = re.compile(r"^(?:\*\*|__)(.+?)(?:\*\*|__)\s*$")
# Hugo: a shortcode's parameters end at its first closing delimiter, so a line of several
# shortcodes (`{{% /tab %}} {{% tab "B" %}}`) is several, not one whose parameters hold the rest
_HUGO = re.compile(r"\{\{([<%])-?\s*(/?)\s*([\w./-]+)((?:(?![>%]\}\}).)*?)\s*-?([>%])\}\}")
# a shortcode that opens in a line and closes on a later one (its name may start the next line)
_HUGO_OPEN_AT_END = re.compile(r"\{\{[<%]-?\s*(?:/?\s*[\w./-]+(?:(?![>%]\}\}).)*)?$")
# Jekyll / Liquid
_LIQUID = re.compile(r"\{%-?\s*(\w+)(.*?)-?%\}")
# Liquid output: a quoted path through a URL filter reads as the path; a site variable as nothing
_LIQUID_PATH = re.compile(r"\{\{-?\s*(['\"])([^'\"{}]*)\1\s*\|\s*(?:relative_url|absolute_url|prepend:[^}]*)\s*-?\}\}")
_LIQUID_VARIABLE = re.compile(r"\{\{-?\s*(?:site|page|jekyll)\.[\w.]+\s*-?\}\}")
_KRAMDOWN_IAL = re.compile(r"^\{:\s*([^}]*)\}\s*$")
# HTML, which every site renders: an element that only arranges what it holds (a line
# `<div class="grid cards" markdown>`, `</details>`) shows nothing, one that holds text shows its
# text (`<summary>Options</summary>`, `<strong>`, `<kbd>`), `<code>` its code as a code span
_HTML_WRAPPERS = ("div|span|section|article|aside|figure|center|main|header|footer|nav|details|p|br|hr|"
                  "table|thead|tbody|tfoot|tr|td|th|ul|ol|li|dl|dt|dd|blockquote")
_HTML_WRAPPER_LINE = re.compile(rf"^(?:</?(?:{_HTML_WRAPPERS})(?=[\s/>])[^<>]*>\s*)+$", re.IGNORECASE | re.MULTILINE)
# block elements' tags part what they hold (a blank), inline ones' tags go
_HTML_BLOCK_TAG = re.compile(r"</?(?:summary|h[1-6]|p|div|details|section|figcaption|center|table|thead|tbody|"
                             r"tr|td|th|ul|ol|li|dl|dt|dd|blockquote)(?=[\s/>])[^<>]*>", re.IGNORECASE)
_HTML_TEXT_TAG = re.compile(r"</?(?:span|strong|b|em|i|u|mark|small|sup|sub|kbd|font|a|abbr|var|samp|ins|del|s)"
                            r"(?=[\s/>])[^<>]*>", re.IGNORECASE)
# an opening tag whose attributes run on to the next line (`<a` then `href="…">`): the page shows none of it
_HTML_OPEN_AT_END = re.compile(r"<(code|" + _HTML_WRAPPERS + r"|summary|h[1-6]|figcaption|span|strong|b|em|i|u|"
                               r"mark|small|sup|sub|kbd|font|a|abbr)(?:\s[^<>]*)?$", re.IGNORECASE)
_HTML_CODE_TAG = re.compile(r"</?code(?=[\s/>])[^<>]*>", re.IGNORECASE)
_HTML_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
# a title line in an HTML admonition (`<h5>Title</h5>` after `<div class="note info">`)
_HTML_TITLE_LINE = re.compile(r"^<(h[1-6]|strong|b)(?=[\s>])[^<>]*>(.+?)</\1>\s*$", re.IGNORECASE)
_HTML_CLASS = re.compile(r"""\bclass(?:Name)?\s*=\s*["']([^"']*)["']""")
# GitHub alerts
# GitHub's five types, and the other admonition types and a title that Hugo themes and Obsidian allow
_GITHUB_ALERT = re.compile(r"^(\s*>\s*)\[!([A-Za-z]+)\][-+]?(?:\s+(.*?))?\s*$")
_SPACES = re.compile(r"(?<=\S)[ ]{2,}(?=\S)")


def mark(kind: str | None) -> str:
    """An admonition type as a reader tells it apart: "Note", "Tip" or "Warning"."""
    kind = (kind or "").lower()
    if kind in _TIP_TYPES:
        return "Tip"
    if kind in _WARNING_TYPES:
        return "Warning"
    return "Note"


def attributes(text: str) -> dict[str, str]:
    """`key="value"` (or 'value', {value}, bare) pairs of a tag, a shortcode or an MDC `{…}`."""
    found = {}
    for match in _ATTR.finditer(text or ""):
        value = next((g for g in match.groups()[1:] if g is not None), "")
        found.setdefault(match.group(1).lstrip(":").lower(), value)
    return found


def label_of(attrs: dict[str, str]) -> str:
    return next((attrs[name].strip() for name in _LABEL_ATTRIBUTES if attrs.get(name, "").strip()), "")


def positional(text: str) -> list[str]:
    """The positional arguments of a shortcode (`{{< tab "Linux" >}}`), without key=value pairs."""
    text = _ATTR.sub(" ", text or "")
    return [next(g for g in m.groups() if g is not None) for m in _POSITIONAL.finditer(text)]


def _icon_kind(icon: str) -> str | None:
    """The admonition type an icon stands for (`i-lucide-triangle-alert`: a warning)."""
    icon = icon.lower()
    if any(word in icon for word in ("warn", "alert", "triangle", "danger", "error", "octagon")):
        return "warning"
    if any(word in icon for word in ("lightbulb", "sparkle", "tip", "rocket")):
        return "tip"
    return None


def _admonition_line(kind: str | None, title: str = "") -> str:
    title = title.strip()
    if title.lower() == mark(kind).lower():  # `title="Note"` on a note: the page shows "Note" once
        title = ""
    return f"{mark(kind)}: {title}" if title else f"{mark(kind)}:"


def _label_line(label: str) -> str:
    label = label.strip()
    return label if not label or label.endswith((":", "?", "!", ".")) else f"{label}:"


def without_comments(text: str) -> tuple[str, bool]:
    """`text` without its HTML comments, and whether a comment opens in it that a later line
    closes. Read left to right, as a site does: a comment shown in a code span (`` `<!-- more -->` ``)
    is text, and a code span inside a comment is comment. Only a line that starts with `<!--` opens a
    comment over several lines (CommonMark's HTML block); an unclosed `<!--` later in a line is text."""
    out, i = [], 0
    while True:
        opener = text.find("<!--", i)
        if opener == -1:
            out.append(text[i:])
            return "".join(out), False
        span = _CODE_SPAN.search(text, i)
        if span and span.start() < opener:
            out.append(text[i:span.end()])
            i = span.end()
            continue
        end = text.find("-->", opener + 4)
        if end == -1:
            if text[:opener].strip():
                out.append(text[i:])
                return "".join(out), False
            return "".join(out) + text[i:opener], True
        out.append(text[i:opener])
        i = end + 3


def html_as_shown(text: str) -> str:
    """`text` with its inline HTML read as the page shows it: text elements' tags gone, `<code>`
    a code span, `<br>` a blank. What is in a code span is text, and stays."""
    if "<" not in text:
        return text
    out, i = [], 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_html_outside_code(text[i:span.start()]))
        out.append(span.group(0))
        i = span.end()
    out.append(_html_outside_code(text[i:]))
    return "".join(out)


def _html_outside_code(text: str) -> str:
    if "<" not in text:
        return text
    text = _HTML_BREAK.sub(" ", text)
    text = _HTML_CODE_TAG.sub("`", text)
    if _HTML_BLOCK_TAG.search(text):  # tags in a row part their neighbours once; at an end, not at all
        text = _HTML_BLOCK_TAG.sub("\0", text)
        text = re.sub(r"^([ \t]*)\0[\0 \t]*", r"\1", text)
        text = re.sub(r"[ \t]*\0[\0 \t]*$", "", text)
        text = re.sub(r"[ \t]*\0[\0 \t]*", " ", text)
    return _HTML_TEXT_TAG.sub("", text)


def html_wrapper_reading(stripped: str) -> str | None | bool:
    """The reading of a line made only of HTML wrapper tags: nothing, or an admonition's mark
    where a wrapper's class names one (`<div class="note info">` reads `Note:`); False for any
    other line."""
    if not _HTML_WRAPPER_LINE.match(stripped):
        return False
    opening = _HTML_CLASS.search(stripped) if not stripped.startswith("</") else None
    kinds = [c for c in opening.group(1).lower().split() if c in ADMONITION_TYPES] if opening else []
    if not kinds:
        return None
    # `admonition warning`: the class that says more than "note" marks it
    return _admonition_line(next((k for k in kinds if mark(k) != "Note"), kinds[0]))


def shortcodes_only(stripped: str) -> list[re.Match] | None:
    """The Hugo shortcodes of a line made only of them (`{{% /tab %}} {{% tab "B" %}}`), else None."""
    found, end = [], 0
    for match in _HUGO.finditer(stripped):
        if stripped[end:match.start()].strip():
            return None
        found.append(match)
        end = match.end()
    return found if found and not stripped[end:].strip() else None


def closes_fence(line: str, marker: str) -> bool:
    """Whether `line` closes a backtick or tilde fence opened by `marker`: the same character, at
    least as many, nothing else."""
    stripped = line.strip()
    return len(stripped) >= len(marker) and not stripped.strip(marker[0])
