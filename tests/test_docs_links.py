"""Every relative link in README.md and docs/**/*.md names a file or folder that exists (anchors ignored)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^ {0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(][^)]*)?\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def link_targets(text: str) -> list[str]:
    """Link targets outside code blocks and code spans."""
    targets, fenced = [], None
    for line in text.splitlines():
        fence = FENCE.match(line)
        if fence:
            fenced = None if fenced == fence.group(1) else (fenced or fence.group(1))
            continue
        if fenced:
            continue
        line = CODE_SPAN.sub("", line)
        targets += INLINE_LINK.findall(line)
        targets += REFERENCE.findall(line)
    return targets


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in link_targets(path.read_text(encoding="utf-8")):
        if not target or target.startswith("#") or EXTERNAL.match(target):
            continue
        relative = target.split("#", 1)[0].split("?", 1)[0]
        resolved = ROOT / relative.lstrip("/") if relative.startswith("/") else path.parent / relative
        if not resolved.exists():
            broken.append(target)
    return broken


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    assert broken_links(path) == [], f"{path.relative_to(ROOT)} links to files that do not exist"


def test_the_checker_sees_links():
    text = "[a](guide.md) ![b](img/x.png) `[c](no.md)` [d](https://example.org) [e](#anchor)\n[f]: ref.md\n"
    assert link_targets(text) == ["guide.md", "img/x.png", "https://example.org", "#anchor", "ref.md"]
    assert link_targets("```\n[a](inside.md)\n```\n[b](outside.md)\n") == ["outside.md"]
