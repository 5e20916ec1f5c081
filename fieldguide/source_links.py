"""Where a cited source lives: a URL for a docs file and its line range.

With `source_url_template` set (a docs site, a repository's blob view), the URL is that
template with `{source}`, `{line_start}` and `{line_end}` filled in, e.g.
`https://github.com/org/repo/blob/main/docs/{source}#L{line_start}-L{line_end}`. Otherwise it
is the service's `/docs-assets/` route, which serves the docs folder, with a `#L12-L30` anchor.
A labelled doc set's file (a version, a product: `fieldguide.labels`) is `/docs-assets/@LABEL/...`,
served from that set's folder; a template may place the label itself with `{label}` (empty for
the unnamed set).
"""
from __future__ import annotations

from urllib.parse import quote

DOCS_ASSETS_PREFIX = "/docs-assets"


def source_url(source: str, line_start: int | None = None, line_end: int | None = None,
               template: str | None = None, label: str | None = None) -> str:
    source = (source or "").lstrip("/")
    if template:
        return (template.replace("{source}", quote(source)).replace("{line_start}", str(line_start or 1))
                .replace("{line_end}", str(line_end or line_start or 1)).replace("{label}", quote(label or "")))
    url = f"{DOCS_ASSETS_PREFIX}/" + (f"@{quote(label)}/" if label else "") + quote(source)
    if line_start:
        url += f"#L{line_start}" + (f"-L{line_end}" if line_end and line_end != line_start else "")
    return url
