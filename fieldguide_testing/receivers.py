"""Real receivers of handoffs on loopback, that a test can take down and bring back on the same port:
an HTTP webhook (the standard library's server) and an SMTP server (aiosmtpd)."""
from __future__ import annotations

import email
import email.policy
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fieldguide_testing.serving import free_port


class WebhookReceiver:
    """Records every POST it takes: (handoff id header, signature valid, parsed body). Down until started."""

    def __init__(self, secret: bytes, port: int | None = None, status: int = 204) -> None:
        self.secret = secret
        self.port = port or free_port()
        self.status = status
        self.received: list[dict] = []
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/support/hook"

    def start(self) -> "WebhookReceiver":
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                expected = "sha256=" + hmac.new(receiver.secret, body, hashlib.sha256).hexdigest()
                signature = self.headers.get("X-Fieldguide-Signature", "")
                with receiver._lock:
                    receiver.received.append({
                        "id": self.headers.get("X-Fieldguide-Handoff"), "path": self.path,
                        "signed": hmac.compare_digest(signature, expected), "body": json.loads(body)})
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def ids(self) -> list[str]:
        with self._lock:
            return [r["id"] for r in self.received]


class SmtpReceiver:
    """aiosmtpd on loopback; records every message it takes (parsed). Down until started."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.messages: list[email.message.EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self._controller = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def start(self) -> "SmtpReceiver":
        from aiosmtpd.controller import Controller

        receiver = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
                message = email.message_from_bytes(envelope.original_content or envelope.content,
                                                   policy=email.policy.default)
                with receiver._lock:
                    receiver.messages.append(message)
                    receiver.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
                return "250 Message accepted for delivery"

        self._controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def ids(self) -> list[str]:
        with self._lock:
            return [m["X-Fieldguide-Handoff"] for m in self.messages]


def wait_for(predicate, timeout: float, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return predicate()
