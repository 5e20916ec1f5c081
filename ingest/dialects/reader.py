"""Reading a document line by line: block constructs, skipped spans and code fences, then inline syntax."""
from __future__ import annotations

import re
from dataclasses import replace

from ingest.dialects.constructs import Constructs
from ingest.dialects.folder import Dialect
from ingest.dialects.state import _Container, Reading, ReadState, _expand, _indent, join_reading
from ingest.dialects.syntax import (_BOLD_LINE, _COLON_CLOSE, _COLON_OPEN, _EXPORT, _FENCE, _GITHUB_ALERT,
                                    _HTML_OPEN_AT_END, _HTML_TITLE_LINE, _HUGO, _HUGO_OPEN_AT_END, _IMPORT,
                                    _IMPORT_CLOSE, _IMPORT_MARKDOWN, _IMPORT_OPEN, _INCLUDE_NAMES, _JSX_LINE,
                                    _JSX_OPEN_START, _KRAMDOWN_IAL, _LIQUID, _LIST_ITEM, _MDC_SLOT, _MDX_COMMENT,
                                    _MK_ABBREVIATION, _MK_ADMONITION, _MK_ICON, _MK_SNIPPET, _MK_TAB, _SPACES,
                                    ADMONITION_TYPES, _admonition_line, _label_line, closes_fence, html_as_shown,
                                    html_wrapper_reading, mark, shortcodes_only, without_comments)

# what a family's block step answers for a line that is none of its constructs
_NEXT = object()


class Reader(Constructs):
    """Reads a document's lines in order, keeping what is open (`ReadState`) from line to line."""

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
        indent = _indent(line) - body_indent

        if st.fence is not None and st.fence_item and indent < st.fence_item and not self._partial:
            # the list item that holds the fence ends here, and the fence with it (CommonMark): the
            # reading closes the code block and reads the line as what it is
            closing = " " * st.fence_item + st.fence
            st.fence, st.fence_item, st.item_indent = None, 0, 0
            read = self._line(line, raw, containers, out)
            return closing if read is None else f"{closing}\n{read}"
        if st.fence is not None:
            return self._in_fence(text, text if dedented else raw)
        if st.skip:
            return self._skipping(text)
        if st.opened:
            st.opened = False
            if text.strip() == "---":  # an MDC component's YAML props: settings, nothing shown
                st.skip = "props"
                return None
        if st.mdx_fences and _indent(text) <= 3 and closes_fence(text, st.mdx_fences[-1]):
            st.mdx_fences = st.mdx_fences[:-1]
            return None
        if not self._partial:
            self._follow_list_item(line, body_indent, indent)
        fence = _FENCE.match(text)
        if fence:
            if "docusaurus" in self.families and text.strip()[len(fence.group(1)):].strip() == "mdx-code-block" \
                    and (not st.mdx_fences or len(fence.group(1)) < len(st.mdx_fences[-1])):
                # Docusaurus renders an `mdx-code-block` fence's content as MDX, not as code (one
                # may hold another written with fewer backticks)
                st.mdx_fences = (*st.mdx_fences, fence.group(1))
                return None
            st.fence, st.fence_item = fence.group(1), st.item_indent
            return text if dedented else raw

        cut = False  # part of the line is gone from its reading (a comment, a shortcode's start)
        if "<!--" in text:  # a comment the page never shows, whole or opening here
            text, opened = without_comments(text)
            text, cut = _SPACES.sub(" ", text).rstrip(), True
            if opened:
                st.skip = "html_comment"
            if not text.strip():
                return None
        stripped = text.strip()
        block = self._block(stripped, text, containers)
        if block is not False:
            return block
        if st.pending_title is not None:
            title = _BOLD_LINE.match(stripped) or _HTML_TITLE_LINE.match(stripped)
            index, st.pending_title = st.pending_title, None
            if title and 0 <= index < len(out) and out[index] is not None:
                out[index] = f"{out[index]} {_SPACES.sub(' ', self._inline(title.group(title.lastindex))).strip()}"
                return None
        if "hugo" in self.families and "{{" in text:
            before = self._before_open_shortcode(text)
            if before != text:
                text, cut = before, True
                if not text.strip():
                    return None
        read = self._inline(text)
        if "<" in read:
            read = self._html_tag_at_end(read)
            if read is None:
                return None
        if read != text:
            read = _SPACES.sub(" ", read).rstrip()
        return read if (read != text or dedented or cut) else raw

    def _in_fence(self, text: str, as_is: str) -> str | None:
        """A line inside a code fence: code as written (`as_is`), unless it closes the fence."""
        st = self._state
        if st.fence[0] in "`~" and closes_fence(text, st.fence):
            st.fence, st.fence_item = None, 0
        elif st.fence == "{%" and _LIQUID.fullmatch(text.strip()) and "endhighlight" in text:
            st.fence = None
            return "```"
        elif st.fence == "{{<" and text.lstrip().startswith("{{") and self._closes_hugo_fence(text.strip()):
            return self._hugo_line(shortcodes_only(text.strip()))
        elif "hugo" in self.families and "{{" in text and _HUGO.search(text):
            # Hugo renders shortcodes inside code blocks too (a site variable in a config sample)
            return _HUGO.sub(lambda m: self._hugo(m, block=False) or "", text)
        return as_is

    def _follow_list_item(self, line: str, body_indent: int, indent: int) -> None:
        """Where the content of the list item the lines are in starts: a fence indented as far is in
        the item, and a line indented less ends both."""
        st = self._state
        item = _LIST_ITEM.match(line, body_indent)
        if item:
            spaces = len(item.group(2))
            st.item_indent = item.end(1) - body_indent + (spaces if spaces <= 4 else 1)
        elif indent < st.item_indent:  # the item has ended, or a lazy line: none known
            st.item_indent = 0

    def _before_open_shortcode(self, text: str) -> str:
        """`text` without a Hugo shortcode that opens at its end and closes on a later line (read
        there, once whole: `_skipping`)."""
        opened = _HUGO_OPEN_AT_END.search(text)
        if not opened or text[:opened.start()].count("`") % 2:  # in a code span: text
            return text
        self._state.skip, self._state.jsx = "hugo_inline", opened.group(0).strip()
        return text[:opened.start()].rstrip()

    def _html_tag_at_end(self, read: str) -> str | None:
        """`read` without an HTML opening tag that its line leaves open (`<a` then `href="…">` on the
        next lines, skipped until the tag closes); None when nothing is left."""
        opened = _HTML_OPEN_AT_END.search(read)
        if not opened or read[:opened.start()].count("`") % 2:  # in a code span: text
            return read
        self._state.skip, self._state.jsx = "html_tag", opened.group(1).lower()
        read = read[:opened.start()].rstrip()
        return read if read.strip() else None

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
        if st.skip in ("hugo", "hugo_inline"):
            closed = re.search(r"[>%]\}\}", stripped)
            if not closed:
                st.jsx += " " + stripped
                return None
            # on its own line a shortcode reads as a block (`Warning:`), in a paragraph inline
            block, whole, rest = st.skip == "hugo", f"{st.jsx} {stripped[:closed.end()]}", stripped[closed.end():]
            st.skip, st.jsx = None, ""
            match = _HUGO.match(whole)
            read = (self._hugo(match, block=block) if match else whole) or ""
            if rest.strip():  # the text after it on the closing line, which may open another
                read = f"{read} {self._inline(self._before_open_shortcode(rest))}"
            read = _SPACES.sub(" ", read).strip()
            return read or None
        if st.skip == "hugo_comment":
            if re.search(r"\{\{[<%]-?\s*/\s*comment\s*-?[>%]\}\}", stripped):
                st.skip = None
            return None
        if st.skip == "html_tag":  # the rest of an HTML opening tag: its attributes show nothing
            if ">" not in text:
                return None
            name, st.skip, st.jsx = st.jsx, None, ""
            rest = ("`" if name == "code" else "") + text[text.index(">") + 1:]
            rest = self._html_tag_at_end(self._inline(rest))  # the line may open another
            return _SPACES.sub(" ", rest).rstrip() if rest and rest.strip() else None
        if st.skip == "html_comment":
            if "-->" not in text:
                return None
            st.skip = None
            rest = text[text.index("-->") + 3:]
            return rest if rest.strip() else None
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
        fam = self.families
        if "mkdocs" in fam:
            read = self._mkdocs_block(stripped, _indent(text), containers)
            if read is not _NEXT:
                return read
        if "docusaurus" in fam or "mdc" in fam:
            read = self._colon_block(stripped, containers)
            if read is not _NEXT:
                return read
        if "docusaurus" in fam:
            read = self._mdx_block(stripped, containers)
            if read is not _NEXT:
                return read
        if "hugo" in fam and stripped.startswith("{{") and stripped.endswith("}}"):
            shortcodes = shortcodes_only(stripped)
            if shortcodes:
                return self._hugo_line(shortcodes)
        if "hugo" in fam and stripped[:3] in ("{{<", "{{%") and "}}" not in stripped \
                and re.match(r"^\{\{[<%]-?\s*/?\s*[\w./-]+", stripped):
            # a shortcode whose parameters run over several lines: read once it is whole
            self._state.skip, self._state.jsx = "hugo", stripped
            return None
        if "jekyll" in fam and stripped.startswith("{"):
            read = self._jekyll_block(stripped)
            if read is not _NEXT:
                return read
        if stripped.startswith("<"):  # every site renders HTML: a wrapper's tags show nothing
            read = html_wrapper_reading(stripped)
            if read is not False:
                if read:  # an admonition: a title line after it completes it
                    self._state.pending_title = self._next_index()
                return read
        alert = _GITHUB_ALERT.match(text) if "[!" in text else None
        if alert and alert.group(2).lower() in ADMONITION_TYPES:
            title = _SPACES.sub(" ", self._inline(alert.group(3) or ""))  # an anchor in it shows nothing
            return f"{alert.group(1)}{_admonition_line(alert.group(2), title)}"
        return False

    def _closes_hugo_fence(self, stripped: str) -> bool:
        """Whether a line of shortcodes starts with the one that ends the shortcode read as code."""
        shortcodes = shortcodes_only(stripped)
        return bool(shortcodes) and self._ends_hugo_fence(shortcodes[0])

    def _ends_hugo_fence(self, match: re.Match) -> bool:
        return bool(match.group(2)) and match.group(3).lower().rsplit("/", 1)[-1] == self._state.fence_name

    def _hugo_line(self, shortcodes: list[re.Match]) -> str | None:
        """A line of shortcodes, each read as if alone on its line (`{{% /tab %}} {{% tab "B" %}}`
        ends a tab and opens the next)."""
        st = self._state
        readings = []
        for match in shortcodes:
            if st.fence == "{{<":  # the one that ends the code, or one shown inside it
                if self._ends_hugo_fence(match):
                    st.fence, st.fence_name = None, ""
                    readings.append("```")
                else:
                    readings.append(self._hugo(match, block=False) or "")
                continue
            read = self._hugo(match, block=True)
            if read is not None:
                readings.append(read)
        return "\n".join(readings) if readings else None

    def _mkdocs_block(self, stripped: str, indent: int, containers: list):
        """An admonition, a content tab, a snippet or an abbreviation line; else _NEXT."""
        st = self._state
        match = _MK_ADMONITION.match(stripped) if stripped[:1] in "!?" else None
        if match:
            containers.append(_Container("indent", indent + 4 + max(
                (c.indent for c in containers if c.kind == "indent"), default=0)))
            title = match.group(4)
            # an icon before the title shows as an icon, HTML in it as the page shows it
            title = html_as_shown(_MK_ICON.sub("", title)).strip() if title else title
            if title is not None and not title.strip():
                return f"{mark(match.group(2))}:"
            return _admonition_line(match.group(2), title if title is not None else "")
        match = _MK_TAB.match(stripped) if stripped.startswith("===") else None
        if match:
            containers.append(_Container("indent", indent + 4 + max(
                (c.indent for c in containers if c.kind == "indent"), default=0)))
            return _label_line(_SPACES.sub(" ", html_as_shown(_MK_ICON.sub("", match.group(1)))).strip())
        match = _MK_SNIPPET.match(stripped) if "8<" in stripped else None
        if match:
            target = next((g for g in match.groups() if g), None)
            if target is None:
                st.skip = "snippets"
                return None
            return self.dialect.include_reading(target, self.source)
        if _MK_ABBREVIATION.match(stripped):
            return None
        return _NEXT

    def _colon_block(self, stripped: str, containers: list):
        """A `:::` / `::` container's opening or closing line, or an MDC `#slot` line; else _NEXT."""
        st = self._state
        fam = self.families
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
        return _NEXT

    def _mdx_block(self, stripped: str, containers: list):
        """An MDX import, export or comment line, or a JSX tag alone on its line; else _NEXT."""
        st = self._state
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
        return _NEXT

    def _jekyll_block(self, stripped: str):
        """A Liquid tag alone on its line or a kramdown attribute list; else _NEXT."""
        match = _LIQUID.fullmatch(stripped)
        if match:
            return self._liquid(match, block=True)
        ial = _KRAMDOWN_IAL.match(stripped)
        if ial:
            classes = [c[1:].lower() for c in ial.group(1).split() if c.startswith(".")]
            kind = next((c for c in classes if c in ADMONITION_TYPES or c.endswith("-title")), None)
            return _admonition_line(kind.removesuffix("-title")) if kind else None
        return _NEXT


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
        fence = "```" if state.fence in ("{%", "{{<") else state.fence
        reading = f"{fence}\n{reading}"
    return reading


def read_inline(text: str, dialect: Dialect) -> str:
    """The reading of one line of inline text (a heading's label): components and shortcodes."""
    if not dialect.families or not any(c in text for c in ":<{"):
        return text
    read = Reader(dialect)._inline(text)
    return _SPACES.sub(" ", read).strip() if read != text else text
