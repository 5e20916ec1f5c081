"""Where the page's files come from: image and document URLs, npm-installed libraries.

Screenshot paths in the docs are written relative to their Markdown file (`images/x.svg`)
or to the docs root (`/images/x.svg`). They resolve against `image_base_url` when one is
configured, otherwise against the `/docs-assets/` route that serves the docs folder.
"""
from __future__ import annotations

import posixpath
from pathlib import Path
from urllib.parse import quote, urlsplit

from fieldguide.source_links import DOCS_ASSETS_PREFIX

WEB_DIR = Path(__file__).resolve().parent.parent / "web"

# Files the page loads from the npm packages of web/package.json (installed by `npm ci`).
VENDOR_FILES = {
    "marked.umd.js": ("marked", "lib/marked.umd.js"),
    "purify.min.js": ("dompurify", "dist/purify.min.js"),
    "chart.umd.min.js": ("chart.js", "dist/chart.umd.min.js"),  # the console's charts
}

SAFE_SCHEMES = ("http", "https")


def resolve_asset_url(url: str, source: str = "", image_base_url: str | None = None) -> str:
    """The URL a browser should fetch for `url` as written in docs file `source`."""
    url = (url or "").strip()
    if not url:
        return ""
    parts = urlsplit(url)
    if parts.scheme or url.startswith("//"):
        return url if parts.scheme in SAFE_SCHEMES or url.startswith("//") else ""
    if url.startswith("/"):
        path = url
    else:
        path = "/" + posixpath.join(posixpath.dirname(source), url)
    path = posixpath.normpath(path)
    while path.startswith("/.."):  # never above the docs root
        path = path[3:] or "/"
    if image_base_url:
        return image_base_url.rstrip("/") + quote(path)
    return DOCS_ASSETS_PREFIX + quote(path)


def vendor_path(modules_dir: Path, name: str) -> Path | None:
    if name not in VENDOR_FILES:
        return None
    package, relative = VENDOR_FILES[name]
    path = modules_dir / package / relative
    return path if path.is_file() else None


def missing_vendor_files(modules_dir: Path) -> list[str]:
    return [name for name in VENDOR_FILES if vendor_path(modules_dir, name) is None]
