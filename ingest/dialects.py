"""Docs-site dialects read for their meaning: the text a reader of the rendered page sees.

Documentation is written for a site generator, and each has constructs of its own that
CommonMark reads as literal text. This pass recognises the common ones and gives, for every
source line, what the rendered page shows in its place (its *reading*):

| dialect | construct | reading |
| --- | --- | --- |
| MkDocs / Material | `!!! note "Title"`, `??? tip` (indented body) | `Note: Title`, the body dedented |
| | `=== "Linux"` content tab (indented body) | `Linux:`, the body dedented |
| | `--8<-- "file.md"` snippet | an include (below) |
| | `:material-check:` icons, `{ .md-button }` attribute lists, `*[HTML]: …` abbreviations | nothing |
| Docusaurus / MDX | `import …` / `export …` lines, `{/* comments */}` | nothing |
| | `:::tip Title` / `:::note[Title]` … `:::` | `Tip: Title`, the body |
| | `<Tabs>`, `</TabItem>`, other capitalised JSX tags alone on a line | nothing, or their `label`/`title` |
| | `<TabItem value="x" label="Linux">`, `<Admonition type="tip" title="T">` | `Linux:`, `Tip: T` |
| | an inline `<Icon title="Save" />` | `[Save]` |
| Nuxt Content (MDC) | `::callout{icon="…"}` with a bold title line … `::` | `Note: Title`, the body |
| | `::code-group`, `::card{title="T"}`, `:::tabs-item{label="L"}`, `#slot` lines, YAML props | nothing, `T:`, `L:` |
| | `:icon{name="…" title="Field Width Button"}`, `:kbd[Ctrl]` | `[Field Width Button]`, `Ctrl` |
| | `:partial{content="x"}` | an include |
| Hugo | `{{< notice warning >}}` … `{{< /notice >}}`, `{{< tab "Linux" >}}`, `{{% … %}}` | `Warning:`, `Linux:`, … |
| | `{{< ref "page" >}}` | `page` |
| Jekyll / Liquid | `{% include x.md %}`, `{% if %}` …, `{% highlight py %}`, `{: .note }` | an include, nothing, a code fence, `Note:` |
| GitHub | `> [!WARNING]` | `> Warning:` |

An admonition is marked `Note:`, `Tip:` or `Warning:` (its type folded onto these three), then
its title. An include whose file is in the docs folder reads "(included from PATH)" (that file
is indexed on its own); otherwise "(included content not available)", so the reader sees that
something is missing.

Code fences are never read: a fence that shows the syntax keeps it. A construct the pass does
not recognise passes through unchanged, so nothing is ever lost; the stored text of a chunk is
still the Markdown as written (the reading is what is embedded, scored and quoted).

The reading is line-aligned: `read_lines` gives one entry per source line (None where the line
disappears), so a chunk's reading is the reading of its source lines, and a part that starts
inside a construct is read from the state the document had at that line (`Reading.states`).
Which families are on is the folder's dialect: detected from its files (`detect_dialects`) or
set (`FIELDGUIDE_DOCS_DIALECT`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Iterable

FAMILIES = ("mkdocs", "docusaurus", "mdc", "hugo", "jekyll")
# What a folder without a dialect reads as, and what a manifest from before dialects means.
DEFAULT_DIALECT = "commonmark"
ALL_FAMILIES = frozenset(FAMILIES)
NOT_AVAILABLE = "(included content not available)"

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

# MkDocs / Material
_MK_ADMONITION = re.compile(r"^(!!!|\?\?\?\+?)\s+([\w-]+)((?:\s+[\w-]+)*)\s*(?:\"(.*)\")?\s*$")
_MK_TAB = re.compile(r"^===\+?\s+\"(.*)\"\s*$")
_MK_SNIPPET = re.compile(r"^-{1,2}8<-{1,2}\s*(?:\"([^\"]*)\"|'([^']*)'|(\S+))?\s*$")
_MK_ICON = re.compile(r":(?:material|octicons|fontawesome|simple|fontawesome-solid|fontawesome-regular)-[\w-]+:"
                      r"(?:\{[^}\n]*\})?")
_MK_ABBREVIATION = re.compile(r"^\*\[[^\]]+\]:\s")
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
# Hugo
_HUGO = re.compile(r"\{\{([<%])-?\s*(/?)\s*([\w./-]+)(.*?)\s*-?([>%])\}\}")
# Jekyll / Liquid
_LIQUID = re.compile(r"\{%-?\s*(\w+)(.*?)-?%\}")
_KRAMDOWN_IAL = re.compile(r"^\{:\s*([^}]*)\}\s*$")
# GitHub alerts
_GITHUB_ALERT = re.compile(r"^(\s*>\s*)\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*$", re.IGNORECASE)

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


# ---------------------------------------------------------------------------- folder level
@dataclass(frozen=True)
class Dialect:
    """The families of constructs read in a folder, and the folder's files (for includes)."""

    families: frozenset = ALL_FAMILIES
    sources: frozenset = frozenset()  # docs-relative paths of the folder's files

    @property
    def name(self) -> str:
        """What the manifest records: "commonmark" or the families, joined by "+"."""
        return "+".join(f for f in FAMILIES if f in self.families) or DEFAULT_DIALECT

    def include_reading(self, target: str, source: str) -> str:
        target = (target or "").strip().strip("\"'")
        found = _resolve(target, source, self.sources)
        return f"(included from {found})" if found else NOT_AVAILABLE


def _resolve(target: str, source: str, sources: frozenset) -> str | None:
    if not target or not sources:
        return None
    import posixpath

    here = posixpath.dirname(source)
    candidates = [posixpath.normpath(posixpath.join(here, target)), posixpath.normpath(target.lstrip("/"))]
    # snippets name paths from the site's root, which holds the docs folder (`docs/x.md`)
    parts = target.lstrip("/").split("/")
    candidates += ["/".join(parts[i:]) for i in range(1, len(parts))]
    for candidate in candidates:
        for suffix in ("", ".md", ".mdx", ".markdown"):
            if candidate + suffix in sources:
                return candidate + suffix
    return None


_SIGNALS = {
    "mkdocs": re.compile(r"^\s*(?:!!!|\?\?\?\+?)\s+[\w-]+|^\s*===\+?\s+\"|^\s*-{1,2}8<-{1,2}|:material-[\w-]+:",
                         re.MULTILINE),
    "docusaurus": re.compile(r"^import\s+.+\s+from\s+['\"]@(?:theme|site|docusaurus)|^:::\s*[A-Za-z]|"
                             r"^\s*<(?:Tabs|TabItem|Admonition|DocCardList)\b", re.MULTILINE),
    "mdc": re.compile(r"^\s*::[A-Za-z][\w-]*|(?<![\w:])::?[a-z][\w-]*\{[^}\n]*=", re.MULTILINE),
    "hugo": re.compile(r"\{\{[<%]\s*/?\s*[\w./-]+"),
    "jekyll": re.compile(r"(?<!\{)\{%-?\s*\w+|^\{:\s*[.#]", re.MULTILINE),  # not Hugo's {{% %}}
}


def detect_dialects(texts: Iterable[str]) -> frozenset:
    """The families whose constructs occur in `texts` (a folder's files), outside code fences."""
    found: set[str] = set()
    for text in texts:
        if len(found) == len(FAMILIES):
            break
        prose = _without_fences(text)
        for family, signal in _SIGNALS.items():
            if family not in found and signal.search(prose):
                found.add(family)
    return frozenset(found)


def _without_fences(text: str) -> str:
    if "```" not in text and "~~~" not in text:
        return text
    kept, fence = [], None
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)[0] * 3
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            kept.append(line)
    return "\n".join(kept)


def parse_setting(value: str | None) -> frozenset | None:
    """FIELDGUIDE_DOCS_DIALECT: "auto" (or empty: detect), "commonmark" (none), or families
    joined by "," or "+". A name it does not know is an error that lists the known ones."""
    value = (value or "").strip().lower()
    if value in ("", "auto"):
        return None
    if value in ("commonmark", "gfm", "none", "plain"):
        return frozenset()
    names = [n.strip() for n in re.split(r"[,+]", value) if n.strip()]
    aliases = {"material": "mkdocs", "mdx": "docusaurus", "nuxt": "mdc", "liquid": "jekyll"}
    names = [aliases.get(n, n) for n in names]
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise ValueError(f"Unknown docs dialect {', '.join(unknown)}: use auto, commonmark or any of "
                         f"{', '.join(FAMILIES)} (joined by ',').")
    return frozenset(names)


# ------------------------------------------------------------------------------ line level
@dataclass
class _Container:
    kind: str  # "indent" (MkDocs admonition or tab: the body is indented) | "colon" | "hugo" | "jsx"
    indent: int = 0  # for "indent": the body's indentation
    name: str = ""


@dataclass
class ReadState:
    """What is open before a line: enough to read a part that starts there."""

    containers: tuple = ()
    fence: str | None = None  # the fence marker while inside a code fence
    skip: str | None = None  # "props" (MDC YAML props), "import", "export", "snippets", "jsx", "comment"
    depth: int = 0  # brace depth of an `export` block
    pending_title: int | None = None  # a reading line waiting for an MDC callout's bold title
    jsx: str = ""  # a multi-line JSX opening tag read so far
    opened: bool = False  # the line before opened an MDC component (YAML props may follow)
    # MDX components imported from Markdown files (`import Steps from './_steps.md'`): name -> path.
    # Replaced, never changed in place: the states kept for each line share it.
    imports: dict = field(default_factory=dict)


@dataclass
class Reading:
    lines: list  # one entry per source line: its reading, or None where the line disappears
    states: list = field(default_factory=list)  # ReadState before each line

    def text(self, start: int, end: int) -> str:
        return join_reading(self.lines[start:end])


def join_reading(lines: Iterable[str | None]) -> str:
    """The reading lines of a span as text: vanished lines dropped, runs of blank lines made one,
    blank lines at both ends dropped."""
    out: list[str] = []
    for line in lines:
        if line is None:
            continue
        if not line.strip() and (not out or not out[-1].strip()):
            continue
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


def _expand(line: str) -> str:
    return line.expandtabs(4) if "\t" in line else line


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


class Reader:
    def __init__(self, dialect: Dialect, source: str = ""):
        self.dialect = dialect
        self.families = dialect.families
        self.source = source

    def read(self, lines: list[str], state: ReadState | None = None, keep_states: bool = False,
             partial_first: bool = False) -> Reading:
        """`partial_first`: the first line is the end of a line (a part's overlap), whose missing
        indentation closes nothing."""
        state = state or ReadState()
        self._partial = partial_first
        containers = list(state.containers)
        out: list[str | None] = []
        states: list[ReadState] = []
        self._state = replace(state)
        for raw in lines:
            if keep_states:
                states.append(replace(self._state, containers=tuple(containers)))
            self._out_length = len(out)  # the index this line's reading takes
            out.append(self._line(_expand(raw), raw, containers, out))
            self._partial = False
        self._state.containers = tuple(containers)
        return Reading(out, states)

    # ------------------------------------------------------------------------- one line
    def _line(self, line: str, raw: str, containers: list, out: list) -> str | None:
        st = self._state
        if not self.families:
            return raw
        # indentation-based bodies (MkDocs admonitions and tabs): a line indented less closes them
        if line.strip() and not self._partial:
            while containers and containers[-1].kind == "indent" and _indent(line) < containers[-1].indent:
                containers.pop()
        body_indent = min(max((c.indent for c in containers if c.kind == "indent"), default=0), _indent(line))
        if not line.strip():
            return "" if body_indent else raw
        text = line[body_indent:] if body_indent else raw
        dedented = body_indent > 0

        if st.fence is not None:
            if text.lstrip().startswith(st.fence) and not text.strip().strip(st.fence[0]):
                st.fence = None
            elif st.fence == "{%" and _LIQUID.fullmatch(text.strip()) and "endhighlight" in text:
                st.fence = None
                return "```"
            elif "hugo" in self.families and "{{" in text and _HUGO.search(text):
                # Hugo renders shortcodes inside code blocks too (a site variable in a config sample)
                return _HUGO.sub(lambda m: self._hugo(m, block=False) or "", text)
            return text if dedented else raw
        if st.skip:
            return self._skipping(text)
        if st.opened:
            st.opened = False
            if text.strip() == "---":  # an MDC component's YAML props: settings, nothing shown
                st.skip = "props"
                return None
        fence = _FENCE.match(text)
        if fence:
            st.fence = fence.group(1)
            return text if dedented else raw

        stripped = text.strip()
        block = self._block(stripped, text, containers)
        if block is not False:
            return block
        if st.pending_title is not None:
            title = _BOLD_LINE.match(stripped)
            index, st.pending_title = st.pending_title, None
            if title and 0 <= index < len(out) and out[index] is not None:
                out[index] = f"{out[index]} {title.group(1).strip()}"
                return None
        read = self._inline(text)
        if read != text:
            read = _SPACES.sub(" ", read).rstrip()
        return read if (read != text or dedented) else raw

    def _skipping(self, text: str) -> str | None:
        st = self._state
        stripped = text.strip()
        if st.skip == "props":
            if stripped == "---":
                st.skip = None
            return None
        if st.skip == "import":
            if _IMPORT_CLOSE.search(stripped):
                st.skip = None
            return None
        if st.skip == "export":
            st.depth += stripped.count("{") + stripped.count("(") + stripped.count("[")
            st.depth -= stripped.count("}") + stripped.count(")") + stripped.count("]")
            if st.depth <= 0:
                st.skip, st.depth = None, 0
            return None
        if st.skip == "comment":
            if re.search(r"\{%-?\s*endcomment\s*-?%\}", stripped):
                st.skip = None
            return None
        if st.skip == "snippets":
            if _MK_SNIPPET.match(stripped) and not _MK_SNIPPET.match(stripped).group(1) \
                    and not _MK_SNIPPET.match(stripped).group(3):
                st.skip = None
                return None
            return self.dialect.include_reading(stripped, self.source)
        if st.skip == "jsx":
            # a JSX opening tag over several lines: a tab or an admonition shows its label once
            # the tag is whole; another component shows its attributes' values line by line
            # (`<FormattedTabs bash="…" powershell="…" />` shows each command), its props' code too
            name = st.jsx.split()[0].lstrip("<").lower()
            quoted = st.jsx.count("`") % 2 == 1  # inside a template literal: the line is a value
            ends = not quoted and (stripped.endswith(">") and not stripped.endswith("=>"))
            st.jsx += "\n" + stripped
            if name in ("tabitem", "tab", "admonition") or name in _INCLUDE_NAMES:
                if ends:
                    st.skip = None
                    return self._jsx_tag(" ".join(st.jsx.split("\n")))
                return None
            if ends:
                st.skip = None
                stripped = stripped[:-2] if stripped.endswith("/>") else stripped[:-1]
            return self._jsx_attribute_line(text if quoted else stripped, quoted)
        st.skip = None  # pragma: no cover - every skip kind is handled above
        return text

    # ----------------------------------------------------------------------- block lines
    def _block(self, stripped: str, text: str, containers: list):
        """The reading of a line that is a block construct, or False."""
        st = self._state
        fam = self.families
        indent = _indent(text)
        if "mkdocs" in fam:
            match = _MK_ADMONITION.match(stripped) if stripped[:1] in "!?" else None
            if match:
                containers.append(_Container("indent", indent + 4 + max(
                    (c.indent for c in containers if c.kind == "indent"), default=0)))
                title = match.group(4)
                if title is not None and not title.strip():
                    return f"{mark(match.group(2))}:"
                return _admonition_line(match.group(2), title if title is not None else "")
            match = _MK_TAB.match(stripped) if stripped.startswith("===") else None
            if match:
                containers.append(_Container("indent", indent + 4 + max(
                    (c.indent for c in containers if c.kind == "indent"), default=0)))
                return _label_line(match.group(1))
            match = _MK_SNIPPET.match(stripped) if "8<" in stripped else None
            if match:
                target = next((g for g in match.groups() if g), None)
                if target is None:
                    st.skip = "snippets"
                    return None
                return self.dialect.include_reading(target, self.source)
            if _MK_ABBREVIATION.match(stripped):
                return None
        if "docusaurus" in fam or "mdc" in fam:
            if stripped.startswith("::"):
                close = _COLON_CLOSE.match(stripped)
                if close:
                    for index in range(len(containers) - 1, -1, -1):
                        if containers[index].kind == "colon":
                            del containers[index:]
                            st.pending_title = None
                            return None
                    return False
                opened = _COLON_OPEN.match(stripped)
                # without MDC, only an admonition is a `:::` container: another name passes through
                if opened and ("mdc" in fam or (len(opened.group(1)) >= 3
                                                and opened.group(2).lower() in ADMONITION_TYPES)):
                    return self._colon_open(opened, containers)
            if "mdc" in fam and stripped.startswith("#") and any(c.kind == "colon" for c in containers) \
                    and _MDC_SLOT.match(stripped):
                return None
        if "docusaurus" in fam:
            if stripped.startswith("import") and not containers:
                if _IMPORT.match(stripped):
                    partial = _IMPORT_MARKDOWN.match(stripped)
                    if partial:
                        st.imports = {**st.imports, partial.group(1): partial.group(2)}
                    return None
                if _IMPORT_OPEN.match(stripped):
                    st.skip = "import"
                    return None
            if stripped.startswith("export") and not containers and _EXPORT.match(stripped):
                depth = sum(stripped.count(c) for c in "{([") - sum(stripped.count(c) for c in "})]")
                if depth > 0:
                    st.skip, st.depth = "export", depth
                return None
            if stripped.startswith("{/*") and _MDX_COMMENT.fullmatch(stripped):
                return None
            if stripped.startswith("<"):
                if _JSX_LINE.match(stripped):
                    return self._jsx_tag(stripped, containers)
                opened = _JSX_OPEN_START.match(stripped)
                if opened:
                    st.skip, st.jsx = "jsx", stripped
                    return None
        if "hugo" in fam and stripped.startswith("{{") and stripped.endswith("}}"):
            match = _HUGO.fullmatch(stripped)
            if match:
                return self._hugo(match, block=True)
        if "jekyll" in fam and stripped.startswith("{"):
            match = _LIQUID.fullmatch(stripped)
            if match:
                return self._liquid(match, block=True)
            ial = _KRAMDOWN_IAL.match(stripped)
            if ial:
                classes = [c[1:].lower() for c in ial.group(1).split() if c.startswith(".")]
                kind = next((c for c in classes if c in ADMONITION_TYPES or c.endswith("-title")), None)
                return _admonition_line(kind.removesuffix("-title")) if kind else None
        alert = _GITHUB_ALERT.match(text)
        if alert:
            return f"{alert.group(1)}{mark(alert.group(2))}:"
        return False

    def _colon_open(self, opened: re.Match, containers: list) -> str | None:
        st = self._state
        name = opened.group(2).lower()
        attrs = attributes(opened.group(4) or "")
        title = (opened.group(3) or "").strip() or attrs.get("title", "").strip() or (opened.group(5) or "").strip()
        containers.append(_Container("colon", name=name))
        st.opened = True
        if name in _INCLUDE_NAMES:
            return self.dialect.include_reading(attrs.get("path") or attrs.get("content") or "", self.source)
        if name in ADMONITION_TYPES:
            kind = attrs.get("type") or attrs.get("color") or _icon_kind(attrs.get("icon", "")) or name
            line = _admonition_line(kind if kind.lower() in ADMONITION_TYPES else name, title)
            if not title:
                st.pending_title = self._next_index()
            return line
        label = label_of(attrs) or title
        if label:
            return _label_line(label)
        return None

    def _next_index(self) -> int:
        return self._out_length  # the opener's own index: the bold line after it completes it

    def _jsx_tag(self, tag: str, containers: list | None = None) -> str | None:
        match = _JSX_LINE.match(tag.strip())
        if not match:
            return tag
        closing, name, rest, self_closing = match.groups()
        if closing:
            return None
        attrs = attributes(rest)
        lower = name.lower()
        if name in self._state.imports:  # a Markdown file imported as a component: its text shows here
            return self.dialect.include_reading(self._state.imports[name], self.source)
        if lower == "admonition":
            return _admonition_line(attrs.get("type"), attrs.get("title", ""))
        if lower in ("tabitem", "tab"):
            return _label_line(attrs.get("label") or attrs.get("value") or "")
        if lower in _INCLUDE_NAMES:
            return self.dialect.include_reading(attrs.get("path") or attrs.get("src") or "", self.source)
        label = label_of(attrs)
        if label and self_closing:
            return f"[{label}]"
        return _label_line(label) if label else None

    @staticmethod
    def _jsx_attribute_line(line: str, quoted: bool) -> str | None:
        """One line of a multi-line JSX tag as the reader sees its value: `bash="cscli …"` reads
        `bash: cscli …`; a line of a template literal's text reads as itself."""
        if quoted:
            line = re.sub(r"`\s*\}?\s*(/?>)?\s*$", "", line)
            return line if line.strip() else None
        line = line.strip()
        match = re.match(r"^([\w:.-]+)\s*=\s*\{?\s*([\"'`])(.*?)(?:\2\s*\}?)?$", line)
        if match:
            value = match.group(3).strip()
            return f"{match.group(1)}: {value}" if value else f"{match.group(1)}:"
        if re.match(r"^[\w:.-]+(?:\s*=\s*\{[^}]*\})?$", line) or not re.search(r"\w", line):
            return None  # a flag, an expression or its closing brackets: nothing a reader sees
        return line

    def _hugo(self, match: re.Match, block: bool) -> str | None:
        _, closing, name, rest, _ = match.groups()
        lower = name.lower().rsplit("/", 1)[-1]
        if closing:
            return None if block else ""
        attrs = attributes(rest)
        args = positional(rest)
        if lower in ("sitevar", "param", "var", "siteparam") and not block:
            # the value shown where the site's own value is unknown (`nojs`), else the variable's name
            return attrs.get("nojs") or attrs.get("default") or attrs.get("name") or (args[0] if args else "")
        if lower in ("ref", "relref"):
            return (args[0] if args else attrs.get("path", "")) if not block else None
        if lower in _INCLUDE_NAMES or lower in ("readfile", "include", "embed"):
            return self.dialect.include_reading(attrs.get("file") or attrs.get("path") or (args[0] if args else ""),
                                                self.source)
        title = attrs.get("title", "")
        if lower in ADMONITION_TYPES or lower in ("hint", "alert", "notice", "callout", "admonition"):
            kind = attrs.get("type") or attrs.get("color") or attrs.get("context") or (args[0] if args else lower)
            if kind.lower() not in ADMONITION_TYPES:
                title, kind = title or kind, lower
            line = _admonition_line(kind, title)
            return line if block else f"{line} "
        if lower in ("tab", "tabs-item", "tabitem"):
            label = attrs.get("name") or attrs.get("title") or attrs.get("label") or attrs.get("header") or (
                args[0] if args else "")
            return _label_line(label) if block else label
        label = label_of(attrs) or (args[0] if args and lower in ("details", "expand", "collapse", "button",
                                                                  "badge", "kbd", "tooltip") else "")
        if not label:
            return None if block else ""
        if not block:
            return f"[{label}]"
        return label if lower in ("figure", "img", "image", "button", "badge") else _label_line(label)

    def _liquid(self, match: re.Match, block: bool) -> str | None:
        name, rest = match.group(1).lower(), match.group(2).strip()
        if name in ("include", "include_relative", "include_cached"):
            target = rest.split()[0] if rest.split() else ""
            return self.dialect.include_reading(target, self.source)
        if name == "highlight":
            if block:
                self._state.fence = "{%"  # its lines are code until {% endhighlight %}
            return f"```{rest.split()[0] if rest.split() else ''}" if block else ""
        if name == "endhighlight":
            return "```" if block else ""
        if name in ("link", "post_url"):
            return rest.split()[0] if rest.split() else ""
        if name == "comment" and block:
            self._state.skip = "comment"
            return None
        return None if block else ""

    # ---------------------------------------------------------------------- inline syntax
    def _inline(self, text: str) -> str:
        fam = self.families
        if "mdc" in fam and ":" in text:
            text = _MDC_INLINE.sub(self._mdc_inline, text)
        if ("mdc" in fam or "mkdocs" in fam) and "{" in text:
            text = _ATTR_LIST.sub("", text)
        if "mkdocs" in fam and ":" in text:
            text = _MK_ICON.sub("", text)
        if "docusaurus" in fam and "<" in text:
            text = _JSX_INLINE_SELF.sub(self._jsx_inline, text)
            text = _JSX_INLINE_TAG.sub(lambda m: "", text)
        if "docusaurus" in fam and "{/*" in text:
            text = _MDX_COMMENT.sub("", text)
        if "hugo" in fam and "{{" in text:
            text = _HUGO.sub(lambda m: self._hugo(m, block=False) or "", text)
        if "jekyll" in fam and "{%" in text:
            text = _LIQUID.sub(lambda m: self._liquid(m, block=False) or "", text)
        return text

    def _mdc_inline(self, match: re.Match) -> str:
        name, content, attrs_text = match.group(1)[1:], match.group(2), match.group(3)
        if content is None and attrs_text is None:
            return match.group(0)  # `:word` alone is prose, not a component
        attrs = attributes(attrs_text or "")
        lower = name.lower()
        if lower in _INCLUDE_NAMES:
            return self.dialect.include_reading(attrs.get("path") or attrs.get("content") or content or "",
                                                self.source)
        if content is not None and content.strip():
            return content
        label = label_of({k: v for k, v in attrs.items() if k != "name"}) or (
            attrs.get("name", "") if lower not in ("icon", "uicon", "u-icon") else "")
        return f"[{label}]" if label else ""

    def _jsx_inline(self, match: re.Match) -> str:
        if match.group(1) in self._state.imports:
            return self.dialect.include_reading(self._state.imports[match.group(1)], self.source)
        label = label_of(attributes(match.group(2)))
        return f"[{label}]" if label else ""


def read_lines(lines: list[str], dialect: Dialect = Dialect(), source: str = "", start: int = 0,
               keep_states: bool = False) -> Reading:
    """The reading of `lines[start:]`, one entry per line (lines before `start`, such as front
    matter, read as themselves)."""
    head = Reading(list(lines[:start]), [ReadState()] * start if keep_states else [])
    if not dialect.families:
        return Reading(list(lines), [ReadState()] * len(lines) if keep_states else [])
    body = Reader(dialect, source).read(lines[start:], keep_states=keep_states)
    return Reading(head.lines + body.lines, head.states + body.states)


def read_fragment(text: str, dialect: Dialect, source: str = "", state: ReadState | None = None,
                  partial_first: bool = False) -> str:
    """The reading of a piece of a document (a part of a split chunk) read from `state`, the
    state before its first line (`partial_first`: that line is only its end)."""
    if not dialect.families:
        return text
    reading = join_reading(Reader(dialect, source).read(text.split("\n"), state, partial_first=partial_first).lines)
    if state is not None and state.fence is not None and reading.strip():
        # a part that starts inside a code block: its reading opens the block again, so the code
        # shows as code (and is told apart from prose) where the part is read on its own
        fence = "```" if state.fence == "{%" else state.fence
        reading = f"{fence}\n{reading}"
    return reading


def read_inline(text: str, dialect: Dialect) -> str:
    """The reading of one line of inline text (a heading's label): components and shortcodes."""
    if not dialect.families or not any(c in text for c in ":<{"):
        return text
    read = Reader(dialect)._inline(text)
    return _SPACES.sub(" ", read).strip() if read != text else text


def folder_dialect(texts: Iterable[str], sources: Iterable[str] = (), setting: str | None = None) -> Dialect:
    """The dialect of a docs folder: `setting` (FIELDGUIDE_DOCS_DIALECT) when it names one, else
    the families detected in the folder's `texts`; `sources` are its files (for includes)."""
    families = parse_setting(setting)
    if families is None:
        families = detect_dialects(texts)
    return Dialect(frozenset(families), frozenset(sources))


def folder_dialect_of(docs_dir, paths, setting: str | None = None) -> Dialect:
    """`folder_dialect` of the Markdown files `paths` under `docs_dir`, read from disk."""
    from pathlib import Path

    docs_dir = Path(docs_dir)

    def texts():
        for path in paths:
            try:
                yield Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue

    sources = [Path(p).relative_to(docs_dir).as_posix() for p in paths]
    return folder_dialect(texts(), sources, setting)


# ------------------------------------------------------------------------ left-over syntax
_LEFTOVER = {
    "mkdocs": re.compile(r"^\s*(?:!!!|\?\?\?\+?)\s+[\w-]+|^\s*===\+?\s+\"|-{2}8<-{2}|:material-[\w-]+:", re.MULTILINE),
    "docusaurus": re.compile(r"^import\s+.+\s+from\s+['\"]|^\s*:::|</?(?:Tabs|TabItem|Admonition)\b", re.MULTILINE),
    "mdc": re.compile(r"^\s*::|(?<![\w:\\/]):[A-Za-z][\w-]*\{[^}\n]*\}", re.MULTILINE),
    "hugo": re.compile(r"\{\{[<%]"),
    "jekyll": re.compile(r"(?<!\{)\{%-?\s*\w+"),
}


def leftover_syntax(reading: str, families: Iterable[str] = FAMILIES) -> list[str]:
    """The recognised constructs whose syntax still shows in `reading` outside code fences
    (for the tests and the benchmark that count them): the family names found."""
    prose = _without_fences(reading)
    return [family for family in families if _LEFTOVER[family].search(prose)]


def reading_of(block: dict) -> str:
    """What a reader sees of a chunk or context block: its `reading`, or its `text` when it has
    none (an index built before readings were stored)."""
    reading = block.get("reading")
    return reading if reading is not None else (block.get("text") or "")

