"""The chat page and the files it loads.

    GET /                       the page (strict Content-Security-Policy: only our own scripts run)
    GET /static/{name}          the page's own script and style sheet
    GET /vendor/{name}          marked, DOMPurify and Chart.js, straight from web/node_modules (`npm ci`)
    GET /docs-assets/{path}     the docs folder: screenshots, and the Markdown sources as plain text
"""
from __future__ import annotations

import asyncio
import html
import json
import logging
import mimetypes
from pathlib import Path
from typing import Callable

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

from fieldguide.service.assets import DOCS_ASSETS_PREFIX, WEB_DIR, missing_vendor_files, vendor_path
from fieldguide.service.handoff import handoff_offered
from fieldguide.settings import Settings

log = logging.getLogger("fieldguide.service")

PAGE_FILES = {"chat.js": "text/javascript", "app.js": "text/javascript", "style.css": "text/css",
              # the console's code and style (no data: that comes from /console/api/ with the token)
              "console.js": "text/javascript", "console.css": "text/css"}
TEXT_SUFFIXES = {".md", ".markdown", ".mdx", ".txt"}

PAGE_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src * data:; "
               "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
# Screenshots are opened directly too: an SVG must not be able to run script on our origin.
ASSET_POLICY = "default-src 'none'; img-src * data:; style-src 'unsafe-inline'; sandbox"


def add_web_routes(app: FastAPI, settings: Settings, *, docs_dir: Path | None,
                   label_root: Callable[[str], Path | None] | None = None) -> None:
    """`label_root(label)`: the folder a labelled doc set's files are served from (`/docs-assets/@LABEL/...`)."""
    modules_dir = Path(settings.web_modules_dir) if settings.web_modules_dir else WEB_DIR / "node_modules"
    missing = missing_vendor_files(modules_dir)
    if missing:
        log.warning("chat page libraries missing (%s): run `npm ci --prefix fieldguide/web`; "
                    "answers are shown as plain text until then", ", ".join(missing))
    docs_root = Path(docs_dir).resolve() if docs_dir else None
    page_config = json.dumps({
        "imageBaseUrl": settings.image_base_url or "",
        "assetsPrefix": DOCS_ASSETS_PREFIX,
        "maxQuestionChars": settings.max_question_chars,
        "handoff": handoff_offered(settings),
    })
    template = (WEB_DIR / "index.html").read_text(encoding="utf-8")
    page = template.replace("{{CONFIG}}", html.escape(page_config, quote=True))

    @app.get("/", include_in_schema=False)
    async def chat_page() -> HTMLResponse:
        return HTMLResponse(page, headers={"Content-Security-Policy": PAGE_POLICY, "Cache-Control": "no-cache"})

    @app.get("/static/{name}", include_in_schema=False)
    async def page_file(name: str):
        if name not in PAGE_FILES:
            return JSONResponse({"detail": "not found"}, status_code=404)
        return FileResponse(WEB_DIR / name, media_type=PAGE_FILES[name], headers={"Cache-Control": "no-cache"})

    @app.get("/vendor/{name}", include_in_schema=False)
    async def vendor_file(name: str):
        path = vendor_path(modules_dir, name)
        if path is None:
            return JSONResponse({"detail": "not installed: run `npm ci --prefix fieldguide/web`"}, status_code=404)
        return FileResponse(path, media_type="text/javascript", headers={"Cache-Control": "public, max-age=3600"})

    @app.get(DOCS_ASSETS_PREFIX + "/{path:path}", include_in_schema=False)
    async def docs_asset(path: str):
        root = docs_root
        if path.startswith("@") and label_root is not None:  # a labelled doc set's file
            label, _, path = path[1:].partition("/")
            root = await asyncio.to_thread(label_root, label)
        if root is None:
            return JSONResponse({"detail": "no docs folder is configured"}, status_code=404)
        target = (root / path).resolve()
        if not target.is_file() or not target.is_relative_to(root):
            return JSONResponse({"detail": "not found"}, status_code=404)
        if target.suffix.lower() in TEXT_SUFFIXES:
            media_type = "text/plain; charset=utf-8"
        else:
            media_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        return FileResponse(target, media_type=media_type, headers={
            "Content-Security-Policy": ASSET_POLICY, "X-Content-Type-Options": "nosniff",
            "Cache-Control": "public, max-age=300"})
