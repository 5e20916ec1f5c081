"""What the page shows for one construct of a family: a shortcode, a Liquid tag, a JSX tag, an MDC
component, a `:::` container's opening line."""
from __future__ import annotations

import re

from ingest.dialects.folder import Dialect
from ingest.dialects.state import _Container, ReadState
from ingest.dialects.syntax import (_ATTR_LIST, _HUGO, _INCLUDE_NAMES, _JSX_INLINE_SELF,
                                    _JSX_INLINE_TAG, _JSX_LINE, _LIQUID, _LIQUID_PATH, _LIQUID_VARIABLE, _MDC_INLINE,
                                    _MDX_COMMENT, _MK_ICON, _TRAILING_ATTRS, ADMONITION_TYPES, _admonition_line,
                                    _icon_kind, _label_line, attributes, html_as_shown, label_of, positional,
                                    without_comments)


_HUGO_TABS = ("tab", "tabs-item", "tabitem")
_HUGO_TAB_PANES = ("tabpane", "tabs")


class Constructs:
    """The readings of the constructs of each family: `Reader` reads the lines and finds them;
    these give what the page shows for one (a shortcode, a JSX tag, an MDC component, ...)."""

    dialect: Dialect
    families: frozenset
    source: str
    _state: ReadState
    _out_length: int

    def _colon_open(self, opened: re.Match, containers: list) -> str | None:
        st = self._state
        name = opened.group(2).lower()
        if name.startswith("prose-") and name[6:] in ADMONITION_TYPES:  # Nuxt UI's `::prose-tip`
            name = name[6:]
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
        return self._out_length  # the opener's own index: the title line after it completes it

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
            if lower in _HUGO_TAB_PANES:
                self._state.markdown_tabs, self._state.pane_language = False, ""
            return None if block else ""
        attrs = attributes(rest)
        args = positional(rest)
        if lower in _HUGO_TAB_PANES:  # it only arranges its tabs: its parameters are settings
            self._state.markdown_tabs = attrs.get("text", "").lower() == "true"
            self._state.pane_language = attrs.get("lang") or attrs.get("codelang") or ""
            return None if block else ""
        if lower == "comment" and block:  # its body is a note for the writers: the page shows nothing
            self._state.skip = "hugo_comment"
            return None
        # a tab's body is code in its language, unless the tab or its pane says it holds text
        # (Markdown, which may hold code fences of its own)
        markdown_tab = lower in _HUGO_TABS and (attrs.get("text", "").lower() == "true" if "text" in attrs
                                                else self._state.markdown_tabs)
        # a tab that closes itself ("disabled" header tabs) has no body to read as code
        closes_itself = rest.rstrip().endswith("/")
        if block and (lower == "highlight" or lower in _HUGO_TABS) and not markdown_tab and not closes_itself:
            language = (args[0] if args else attrs.get("lang", "")) if lower == "highlight" else (
                attrs.get("lang") or attrs.get("codelang") or ("text" if attrs.get("code") == "true" else "")
                or self._state.pane_language)
            if language:  # the body is code, highlighted (a tab of a code group): it reads as a fence
                self._state.fence, self._state.fence_name = "{{<", lower
                label = "" if lower == "highlight" else (attrs.get("name") or attrs.get("title")
                                                         or attrs.get("header") or (args[0] if args else ""))
                return f"{_label_line(label)}\n```{language}" if label else f"```{language}"
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
        if lower in _HUGO_TABS:
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
        if "<!--" in text:
            text = without_comments(text)[0]
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
        if "jekyll" in fam and "{{" in text:
            text = _LIQUID_VARIABLE.sub("", _LIQUID_PATH.sub(lambda m: m.group(2), text))
        if "{" in text:  # a heading's id or a paragraph's attribute list, which every site generator reads
            text = _TRAILING_ATTRS.sub("", text)
        if "<" in text:  # inline HTML, which every site renders
            text = html_as_shown(text)
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
