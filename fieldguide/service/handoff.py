"""Handoff to a person: a conversation sent to support, stored first, then delivered with retries.

`POST /conversations/{id}/handoff {"turn": k, "contact": "...", "message": "..."}` (the page and
the widget offer it when an answer is not covered, or after a thumbs-down) builds the request
(`handoff_payload`: the conversation's transcript up to turn k with each turn's citations and
coverage verdict, the reader's contact and message), stores it in the outbox
(`fieldguide.service.state.outbox`), one delivery per configured target, and answers 202. The
worker (`HandoffWorker`, a task of the service) delivers what is due:

* **webhook** (`FIELDGUIDE_HANDOFF_WEBHOOK_URL`): the request as a JSON POST, signed
  `X-Fieldguide-Signature: sha256=<hex HMAC-SHA256 of the body with FIELDGUIDE_HANDOFF_SECRET>`,
  with `X-Fieldguide-Handoff: <id>`; any 2xx answer is delivery;
* **email** (`FIELDGUIDE_HANDOFF_SMTP_URL`, `FIELDGUIDE_HANDOFF_EMAIL_TO`, `..._FROM`): a plain
  text mail of the transcript with the request as a JSON attachment, `X-Fieldguide-Handoff: <id>`
  and a Message-ID made of the id; the reader's contact is its Reply-To when it is an address.

A failed attempt (refused connection, timeout, a non-2xx answer, an SMTP error) is tried again
after 1 s, 2 s, 4 s, ... up to `handoff_retry_max_seconds` (with a little jitter, so replicas
do not retry in step), for `handoff_give_up_hours`; a receiver that is down for a while gets
every request once it is back. A repeated request (same conversation and turn) is the same
handoff: stored once, sent once.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import random
import re
import smtplib
import ssl
import time
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formataddr, format_datetime, parseaddr
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from fieldguide.errors import FieldguideError
from fieldguide.service.analytics import coverage_of

log = logging.getLogger("fieldguide.service")

SIGNATURE_HEADER = "X-Fieldguide-Signature"
ID_HEADER = "X-Fieldguide-Handoff"
FIRST_RETRY_SECONDS = 1.0
LEASE_SECONDS = 120.0  # a claimed delivery is due again after this (its worker died mid-way)
IDLE_POLL_SECONDS = 5.0  # how often an idle worker looks for deliveries another replica stored
BATCH = 10
CONTACT_MAX_CHARS = 320
MESSAGE_MAX_CHARS = 2000
CITATION_FIELDS = ("n", "source", "heading_path", "url", "line_start", "line_end")


@dataclass(frozen=True)
class SmtpTarget:
    host: str
    port: int
    tls: str  # "none" | "starttls" | "tls"
    username: str | None
    password: str | None
    to: tuple[str, ...]
    sender: str


@dataclass(frozen=True)
class HandoffTargets:
    webhook_url: str | None = None
    secret: bytes | None = None
    smtp: SmtpTarget | None = None

    def names(self) -> list[str]:
        return [name for name, on in (("webhook", self.webhook_url), ("email", self.smtp)) if on]

    @property
    def configured(self) -> bool:
        return bool(self.names())


def _address(value: str, setting: str) -> str:
    name, address = parseaddr(value.strip())
    if not re.fullmatch(r"[^@\s]+@[^@\s]+", address or ""):
        raise FieldguideError(f"{setting}: {value!r} is not an email address")
    return formataddr((name, address)) if name else address


def parse_smtp_url(url: str, to: str | None, sender: str | None) -> SmtpTarget:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        raise FieldguideError("FIELDGUIDE_HANDOFF_SMTP_URL: write smtp://[user:password@]host[:port][?starttls=1] "
                              "or smtps://[user:password@]host[:port]")
    query = parse_qs(parts.query)
    starttls = (query.get("starttls") or ["0"])[0].lower() in ("1", "true", "yes")
    tls = "tls" if parts.scheme == "smtps" else "starttls" if starttls else "none"
    if not to or not to.strip():
        raise FieldguideError("FIELDGUIDE_HANDOFF_SMTP_URL is set: set FIELDGUIDE_HANDOFF_EMAIL_TO too (who gets the mail)")
    if not sender or not sender.strip():
        raise FieldguideError("FIELDGUIDE_HANDOFF_SMTP_URL is set: set FIELDGUIDE_HANDOFF_EMAIL_FROM too")
    recipients = tuple(_address(a, "FIELDGUIDE_HANDOFF_EMAIL_TO") for a in to.split(",") if a.strip())
    return SmtpTarget(parts.hostname, parts.port or (465 if tls == "tls" else 25), tls,
                      unquote(parts.username) if parts.username else None,
                      unquote(parts.password) if parts.password else None,
                      recipients, _address(sender, "FIELDGUIDE_HANDOFF_EMAIL_FROM"))


def handoff_offered(settings) -> bool:
    """Whether the pages offer "Contact support" (some target is configured)."""
    smtp = settings.handoff_smtp_url.get_secret_value().strip() if settings.handoff_smtp_url is not None else ""
    return bool((settings.handoff_webhook_url or "").strip() or smtp)


def targets_from_settings(settings) -> HandoffTargets:
    """The configured targets; a target configured halfway is refused with what is missing."""
    webhook = (settings.handoff_webhook_url or "").strip() or None
    secret = settings.handoff_secret.get_secret_value() if settings.handoff_secret is not None else ""
    if webhook:
        if urlsplit(webhook).scheme not in ("http", "https") or not urlsplit(webhook).hostname:
            raise FieldguideError(f"FIELDGUIDE_HANDOFF_WEBHOOK_URL={webhook!r}: write an http:// or https:// URL")
        if not secret:
            raise FieldguideError("FIELDGUIDE_HANDOFF_WEBHOOK_URL is set: set FIELDGUIDE_HANDOFF_SECRET too, so the "
                                  "receiver can tell the service's requests from anyone else's (the body's HMAC)")
    smtp_url = settings.handoff_smtp_url.get_secret_value() if settings.handoff_smtp_url is not None else ""
    smtp = parse_smtp_url(smtp_url, settings.handoff_email_to, settings.handoff_email_from) if smtp_url.strip() else None
    return HandoffTargets(webhook, secret.encode("utf-8") if secret else None, smtp)


def sign(secret: bytes, body: bytes) -> str:
    """The signature header's value: `sha256=` and the hex HMAC-SHA256 of the body."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def handoff_id(conversation_id: str, turn: int) -> str:
    """One id per conversation and turn: a request sent twice (a double click, a retry of the
    POST) is one handoff."""
    return "h-" + hashlib.sha256(f"{conversation_id}#{turn}".encode("utf-8")).hexdigest()[:24]


def _turn_entry(record) -> dict[str, Any]:
    return {"turn": record.turn, "asked_at": _iso(record.started_at), "question": record.question,
            "standalone_question": record.standalone_question, "answer": record.answer or "",
            "status": record.status, "abstain": bool(record.abstain), "coverage": coverage_of(record),
            "coverage_reason": getattr(record, "coverage_reason", None),
            "citations": [{k: c.get(k) for k in CITATION_FIELDS if k in c} for c in record.citations or []
                          if isinstance(c, dict)]}


def _iso(moment: float | None) -> str | None:
    return None if moment is None else datetime.fromtimestamp(moment, tz=timezone.utc).isoformat(timespec="seconds")


def handoff_payload(hid: str, conversation_id: str, turn: int, contact: str, message: str, records: list,
                    rating: str | None, now: float) -> dict[str, Any]:
    """The request support receives: the transcript up to `turn`, that turn's citations and verdict,
    why the reader asked (`not_covered`, `disliked`, or `reader_request`) and how to reach them."""
    transcript = [_turn_entry(r) for r in records if r.turn <= turn]
    last = transcript[-1]
    reason = ("not_covered" if last["coverage"] == "not_covered" else "disliked" if rating == "down"
              else "reader_request")
    return {"id": hid, "type": "fieldguide.handoff", "created_at": _iso(now), "conversation_id": conversation_id,
            "turn": turn, "reason": reason, "contact": contact, "message": message,
            "coverage": last["coverage"], "coverage_reason": last["coverage_reason"], "citations": last["citations"],
            "transcript": transcript}


def _citation_line(c: dict) -> str:
    from fieldguide.gaps import section_name

    where = section_name(c.get("source") or "", c.get("heading_path") or [])
    return f"  [{c.get('n', '?')}] {where}" + (f" <{c['url']}>" if c.get("url") else "")


def email_text(payload: dict) -> str:
    lines = [f"A reader asked for help with turn {payload['turn']} of conversation {payload['conversation_id']} "
             f"({payload['reason'].replace('_', ' ')}).", "", f"Contact: {payload['contact']}"]
    if payload.get("message"):
        lines += ["Message:", *("  " + line for line in payload["message"].splitlines())]
    lines += [f"Coverage of that answer: {payload['coverage']}"
              + (f" ({payload['coverage_reason']})" if payload.get("coverage_reason") else ""), ""]
    for t in payload["transcript"]:
        lines += [f"--- Turn {t['turn']} ({t['asked_at']}, {t['coverage'] or t['status']}) ---",
                  f"Question: {t['question']}"]
        if t.get("standalone_question") and t["standalone_question"] != t["question"]:
            lines.append(f"Understood as: {t['standalone_question']}")
        lines += ["Answer:", *("  " + line for line in (t["answer"] or "(none)").splitlines())]
        if t["citations"]:
            lines += ["Sources:", *(_citation_line(c) for c in t["citations"])]
        lines.append("")
    lines.append(f"Handoff id: {payload['id']}")
    return "\n".join(lines) + "\n"


def email_message(payload: dict, smtp: SmtpTarget) -> EmailMessage:
    first = payload["transcript"][-1]["question"] if payload["transcript"] else ""
    subject = " ".join(first.split())
    subject = subject if len(subject) <= 70 else subject[:69] + "…"
    mail = EmailMessage()
    mail["Subject"] = f"Support request: {subject}"
    mail["From"] = smtp.sender
    mail["To"] = ", ".join(smtp.to)
    mail["Date"] = format_datetime(datetime.now(timezone.utc))
    mail["Message-ID"] = f"<{payload['id']}@fieldguide.handoff>"
    mail[ID_HEADER] = payload["id"]
    _, reply = parseaddr(payload["contact"])
    if re.fullmatch(r"[^@\s<>,;]+@[^@\s<>,;]+\.[^@\s<>,;]+", reply or ""):
        mail["Reply-To"] = reply
    mail.set_content(email_text(payload))
    mail.add_attachment(json.dumps(payload, ensure_ascii=False, indent=2).encode("utf-8"), maintype="application",
                        subtype="json", filename="handoff.json")
    return mail


class DeliveryFailed(Exception):
    pass


def send_webhook(targets: HandoffTargets, payload: dict, timeout: float, client=None) -> None:
    """POST the request to the webhook; `client` an httpx.Client to reuse (its connections: one
    set-up for a run of deliveries, not one each)."""
    import httpx

    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    headers = {"Content-Type": "application/json", SIGNATURE_HEADER: sign(targets.secret, body),
               ID_HEADER: payload["id"], "User-Agent": "fieldguide-handoff"}
    try:
        post = client.post if client is not None else httpx.post
        response = post(targets.webhook_url, content=body, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from exc
    if not 200 <= response.status_code < 300:
        raise DeliveryFailed(f"the webhook answered {response.status_code}")


def send_email(targets: HandoffTargets, payload: dict, timeout: float, client=None) -> None:
    smtp = targets.smtp
    mail = email_message(payload, smtp)
    try:
        if smtp.tls == "tls":
            client = smtplib.SMTP_SSL(smtp.host, smtp.port, timeout=timeout, context=ssl.create_default_context())
        else:
            client = smtplib.SMTP(smtp.host, smtp.port, timeout=timeout)
        with client:
            if smtp.tls == "starttls":
                client.starttls(context=ssl.create_default_context())
            if smtp.username:
                client.login(smtp.username, smtp.password or "")
            client.send_message(mail)
    except (OSError, smtplib.SMTPException) as exc:
        raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from exc


SENDERS = {"webhook": send_webhook, "email": send_email}


def retry_delay(attempts: int, cap: float) -> float:
    """Seconds before attempt `attempts + 1`: 1, 2, 4, ... up to `cap`, with ±20% jitter."""
    base = min(cap, FIRST_RETRY_SECONDS * 2 ** max(0, attempts - 1))
    return base * random.uniform(0.8, 1.2)


class HandoffWorker:
    """Delivers what the outbox holds, as a task of the service (see the module's docstring)."""

    def __init__(self, outbox, targets: HandoffTargets, settings) -> None:
        self.outbox = outbox
        self.targets = targets
        self.retry_cap = settings.handoff_retry_max_seconds
        self.give_up_seconds = settings.handoff_give_up_hours * 3600
        self.timeout = settings.handoff_timeout_seconds
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self._http = None  # the webhook's httpx.Client, made on first use (used by one thread at a time)

    def wake(self) -> None:
        """Deliver now (called from any thread: a request stored in a worker thread)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    def _http_client(self):
        if self._http is None and self.targets.webhook_url:
            import httpx

            self._http = httpx.Client(timeout=self.timeout)
        return self._http

    def deliver(self, delivery) -> bool:
        """One attempt at one delivery (in a worker thread); its outcome is recorded."""
        now = time.time()
        sender = SENDERS.get(delivery.target)
        try:
            if sender is None or delivery.target not in self.targets.names():
                raise DeliveryFailed(f"the {delivery.target} target is no longer configured")
            if delivery.payload is None:
                raise DeliveryFailed("the stored request has no payload")
            sender(self.targets, delivery.payload, self.timeout, self._http_client())
        except DeliveryFailed as exc:
            give_up = now - delivery.created_at >= self.give_up_seconds
            delay = retry_delay(delivery.attempts, self.retry_cap)
            log.warning("handoff %s (%s), attempt %d failed: %s%s", delivery.id, delivery.target, delivery.attempts,
                        exc, "; giving up" if give_up else f"; next try in {delay:.1f} s")
            self.outbox.retry(delivery, str(exc), time.time() + delay, give_up=give_up)
            return False
        self.outbox.delivered(delivery, time.time())
        log.info("handoff %s delivered to the %s target (attempt %d)", delivery.id, delivery.target,
                 delivery.attempts)
        return True

    def run_due(self) -> int:
        """Deliver every delivery due now (in this thread); how many were attempted. When the
        service stops meanwhile, what was claimed and not yet tried is due again at once (not
        after its lease), for the next start or another replica."""
        attempted = 0
        while not self._stopping:
            claimed = self.outbox.claim(time.time(), LEASE_SECONDS, BATCH)
            if not claimed:
                break
            for n, delivery in enumerate(claimed):
                if self._stopping:
                    for left in claimed[n:]:
                        self.outbox.retry(left, "not tried: the service stopped", time.time())
                    break
                self.deliver(delivery)
                attempted += 1
        return attempted

    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        while not self._stopping:
            try:
                await asyncio.to_thread(self.run_due)
                next_due = await asyncio.to_thread(self.outbox.next_due)
            except Exception:  # the state is out of reach for now: try again shortly
                log.exception("handoff worker: could not read the outbox")
                next_due = None
            wait = IDLE_POLL_SECONDS if next_due is None else min(IDLE_POLL_SECONDS, max(0.0, next_due - time.time()))
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=max(0.05, wait))

    @contextlib.asynccontextmanager
    async def running(self):
        task = asyncio.create_task(self.run(), name="fieldguide-handoff")
        try:
            yield
        finally:
            # The attempt in flight ends first (its outcome recorded): the outbox closes after this.
            self._stopping = True
            self._wake.set()
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout=self.timeout + 5)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if self._http is not None:
                self._http.close()


@dataclass
class Handoff:
    """The service's handoff: its targets, and the worker when any is configured."""

    targets: HandoffTargets
    worker: HandoffWorker | None

    def submit(self, outbox, turns, conversation_id: str, turn: int, contact: str, message: str) -> str | None:
        """Store the request (in the caller's thread); its id, or None when there is no such turn.
        Raises LookupError (with a reason) for a turn still being answered."""
        records = turns.turns(conversation_id)
        record = next((r for r in records if r.turn == turn), None)
        if record is None:
            return None
        if record.status == "running":
            raise LookupError("that turn is still being answered: send it once the answer is out")
        rating = None
        votes = [f for f in turns.feedback_since(record.started_at)
                 if f.conversation_id == conversation_id and f.turn == turn]
        if votes:
            rating = max(votes, key=lambda f: f.at).rating
        hid = handoff_id(conversation_id, turn)
        now = time.time()
        payload = handoff_payload(hid, conversation_id, turn, contact, message, records, rating, now)
        outbox.add(hid, self.targets.names(), payload, now)
        if self.worker is not None:
            self.worker.wake()
        return hid
