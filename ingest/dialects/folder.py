"""A docs folder's dialect: the families detected or set, includes resolved against its files, and
the syntax left in a reading."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ingest.dialects.syntax import (_CODE_SPAN, _FENCE, _HTML_BLOCK_TAG, _HTML_CODE_TAG, _HTML_TEXT_TAG,
                                    _HTML_WRAPPER_LINE, closes_fence)

FAMILIES = ("mkdocs", "docusaurus", "mdc", "hugo", "jekyll")
# What a folder without a dialect reads as, and what a manifest from before dialects means.
DEFAULT_DIALECT = "commonmark"
ALL_FAMILIES = frozenset(FAMILIES)
NOT_AVAILABLE = "(included content not available)"


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
    "mkdocs": re.compile(r"^\s*(?:!!!|\?\?\?\+?)\s*[\w-]+|^\s*===\+?\s+\"|^\s*-{1,2}8<-{1,2}|:material-[\w-]+:",
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
            fence = opened.group(1)
        elif fence is not None and closes_fence(line, fence):
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


_LEFTOVER = {
    "mkdocs": re.compile(r"^\s*(?:!!!|\?\?\?\+?)\s*[\w-]+|^\s*===\+?\s+\"|-{2}8<-{2}|:material-[\w-]+:", re.MULTILINE),
    "docusaurus": re.compile(r"^import\s+.+\s+from\s+['\"]|^\s*:::|</?(?:Tabs|TabItem|Admonition)\b", re.MULTILINE),
    "mdc": re.compile(r"^\s*::|(?<![\w:\\/]):[A-Za-z][\w-]*\{[^}\n]*\}", re.MULTILINE),
    "hugo": re.compile(r"\{\{[<%]"),
    "jekyll": re.compile(r"(?<!\{)\{%-?\s*\w+"),
}


# (a `<br>` is left out: a diagram's labels in a component's props hold it as their own syntax)
_HTML_SHOWN_AS_TEXT = re.compile("|".join(p.pattern for p in (_HTML_WRAPPER_LINE, _HTML_BLOCK_TAG, _HTML_TEXT_TAG,
                                                                  _HTML_CODE_TAG)), re.IGNORECASE | re.MULTILINE)
_MDX_CODE_BLOCK = re.compile(r"^ {0,3}`{3,}\s*mdx-code-block\s*$", re.MULTILINE)


def leftover_syntax(reading: str, families: Iterable[str] = FAMILIES) -> list[str]:
    """The recognised constructs whose syntax still shows in `reading` outside code fences and
    code spans (for the tests and the benchmark that count them): the family names found."""
    prose = _CODE_SPAN.sub("", _without_fences(reading))  # a construct named in a code span is text
    # no dialect's page shows a comment, a wrapper's tags or a text element's
    shown_by_none = "<!--" in prose or _HTML_SHOWN_AS_TEXT.search(prose) is not None
    mdx_fence = _MDX_CODE_BLOCK.search(reading) is not None
    return [family for family in families if shown_by_none or _LEFTOVER[family].search(prose)
            or (family == "docusaurus" and mdx_fence)]


def reading_of(block: dict) -> str:
    """What a reader sees of a chunk or context block: its `reading`, or its `text` when it has
    none (an index built before readings were stored)."""
    reading = block.get("reading")
    return reading if reading is not None else (block.get("text") or "")
