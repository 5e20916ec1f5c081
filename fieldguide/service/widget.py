"""`GET /widget.js`: the embeddable chat widget, one script for any docs site.

The script is web/chat.js (the chat page's asking, streaming and safe rendering) and
web/widget.js (the shadow-DOM shell), joined into one private function scope with the
service's settings (`SERVER_CONFIG`), built once per app. Its calls back to the service are
cross-origin: the page's origin must be in FIELDGUIDE_ALLOWED_ORIGINS (service/origins.py).
"""
from __future__ import annotations

import json

from fastapi import FastAPI
from fastapi.responses import Response

from fieldguide.service.assets import DOCS_ASSETS_PREFIX, WEB_DIR
from fieldguide.service.handoff import handoff_offered
from fieldguide.settings import Settings

WIDGET_SOURCES = ("chat.js", "widget.js")


def widget_script(settings: Settings) -> str:
    config = json.dumps({"imageBaseUrl": settings.image_base_url or "", "assetsPrefix": DOCS_ASSETS_PREFIX,
                         "maxQuestionChars": settings.max_question_chars, "handoff": handoff_offered(settings)})
    parts = [(WEB_DIR / name).read_text(encoding="utf-8") for name in WIDGET_SOURCES]
    return "(function () {\n\"use strict\";\nconst SERVER_CONFIG = " + config + ";\n" + "\n".join(parts) + "\n})();\n"


def add_widget_routes(app: FastAPI, settings: Settings) -> None:
    body = widget_script(settings).encode("utf-8")

    @app.get("/widget.js", include_in_schema=False)
    async def widget() -> Response:
        return Response(body, media_type="text/javascript; charset=utf-8",
                        headers={"Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff"})
