"""The HTTP service: conversations streamed as Server-Sent Events, LangServe routes, the chat page."""
from fieldguide.service.app import create_app

__all__ = ["create_app"]
