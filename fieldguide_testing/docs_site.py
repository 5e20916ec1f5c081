"""A product's docs site on another origin, a page that embeds the service's widget: what the
widget tests and the widget benchmark load in the browser."""
from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

# The docs site has its own styles and its own `marked`: the widget must leave both alone.
DOCS_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Docs</title>
<style>button {{ background: rgb(255, 0, 0) !important; }}</style>
<script>window.marked = "the page's own";</script></head>
<body><h1>Product docs</h1>
<script src="{service}/widget.js" async data-title="Ask the docs" data-placeholder="Your question"></script>
</body></html>"""


def docs_site(service: str) -> FastAPI:
    site = FastAPI()

    @site.get("/")
    async def page() -> HTMLResponse:
        return HTMLResponse(DOCS_PAGE.format(service=service))

    return site
