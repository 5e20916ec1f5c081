"""POST /conversations/{id}/handoff (service/handoff.py): stored in the outbox, delivered to a real
webhook on loopback (signed) and a real SMTP server (aiosmtpd), retried while they are down."""
from __future__ import annotations

import hashlib
import hmac
import json
import time

import httpx
import pytest

from fieldguide.errors import FieldguideError
from fieldguide.service import handoff
from fieldguide.service.state.outbox import MemoryOutbox, SqliteOutbox
from fieldguide.settings import Settings
from tests.conftest import missing
from fieldguide_testing.receivers import SmtpReceiver, WebhookReceiver, wait_for
from fieldguide_testing.scripted_graph import build_scripted_graph
from fieldguide_testing.serving import fresh_sqlite_url, make_app, serve
from tests.service.sse import read_stream_events as read

SECRET = "handoff-secret-for-tests"
SUPPORT = "support@example.com"
SENDER = "fieldguide <assistant@example.com>"


@pytest.fixture(scope="module")
def aiosmtpd():
    try:
        import aiosmtpd  # noqa: F401
    except ImportError as exc:
        missing(f"aiosmtpd is not installed ({exc}): pip install -e '.[test]'")


def targets(webhook: WebhookReceiver | None = None, smtp: SmtpReceiver | None = None, **extra) -> dict:
    values = dict(extra)
    if webhook is not None:
        values.update(handoff_webhook_url=webhook.url, handoff_secret=SECRET)
    if smtp is not None:
        values.update(handoff_smtp_url=smtp.url, handoff_email_to=SUPPORT, handoff_email_from=SENDER)
    return values


def ask(client: httpx.Client, base: str, question: str, conversation_id: str | None = None) -> str:
    body = {"question": question, **({"conversation_id": conversation_id} if conversation_id else {})}
    started = client.post(base + "/conversations", json=body).json()
    events = read(client, base, started["stream_url"])
    assert events[-1].event == "done"
    return started["conversation_id"]


def not_covered_graph(checkpointer=None):
    return build_scripted_graph(checkpointer, answer="The documentation does not cover this.", context=[])


def test_a_handoff_reaches_the_webhook_signed_and_the_mailbox(aiosmtpd):
    webhook, smtp = WebhookReceiver(SECRET.encode()).start(), SmtpReceiver().start()
    try:
        app = make_app(lambda checkpointer=None: build_scripted_graph(checkpointer, answer="About {question} [1]."),
                       **targets(webhook, smtp))
        with serve(app) as base, httpx.Client(timeout=30) as client:
            cid = ask(client, base, "Which fields does the booking form have?")
            ask(client, base, "And where is the skipper?", cid)
            assert client.post(f"{base}/conversations/{cid}/feedback", json={"turn": 2, "rating": "down"}
                               ).status_code == 204
            response = client.post(f"{base}/conversations/{cid}/handoff",
                                   json={"turn": 2, "contact": "Ada <ada@example.org>", "message": "Please call."})
            assert response.status_code == 202
            hid = response.json()["handoff_id"]
            assert response.json()["status"] == "queued" and hid == handoff.handoff_id(cid, 2)
            assert wait_for(lambda: webhook.received and smtp.messages, 15)
            outbox = app.state.service.state.outbox
            assert wait_for(lambda: all(d.status == "delivered" for d in outbox.deliveries()), 5)
            stored = outbox.deliveries()
    finally:
        webhook.stop()
        smtp.stop()
    (posted,) = webhook.received
    assert posted["signed"] and posted["id"] == hid and posted["path"] == "/support/hook"
    body = posted["body"]
    assert (body["id"], body["conversation_id"], body["turn"], body["reason"]) == (hid, cid, 2, "disliked")
    assert body["contact"] == "Ada <ada@example.org>" and body["message"] == "Please call."
    assert [t["question"] for t in body["transcript"]] == ["Which fields does the booking form have?",
                                                           "And where is the skipper?"]
    assert body["transcript"][1]["answer"] == "About And where is the skipper? [1]."
    assert body["coverage"] == "covered" and body["transcript"][0]["coverage"] == "covered"
    assert body["citations"] and body["citations"][0]["source"] == "screens/booking-form.md"
    assert body["citations"] == body["transcript"][1]["citations"]
    (mail,) = smtp.messages
    assert mail["X-Fieldguide-Handoff"] == hid and mail["Message-ID"] == f"<{hid}@fieldguide.handoff>"
    assert mail["To"] == SUPPORT and mail["Reply-To"] == "ada@example.org"
    assert mail["Subject"] == "Support request: And where is the skipper?"
    assert smtp.envelopes == [("assistant@example.com", [SUPPORT])]
    text = mail.get_body(("plain",)).get_content()
    assert "Contact: Ada <ada@example.org>" in text and "Question: Which fields does the booking form have?" in text
    assert "[1] screens/booking-form.md#Booking form > Fields of the form" in text
    (attachment,) = list(mail.iter_attachments())
    assert attachment.get_filename() == "handoff.json" and json.loads(attachment.get_content())["id"] == hid
    assert sorted((d.target, d.status, d.attempts, d.payload) for d in stored) == [
        ("email", "delivered", 1, None), ("webhook", "delivered", 1, None)]  # the transcript is not kept


def test_a_not_covered_answer_is_handed_over_as_such():
    webhook = WebhookReceiver(SECRET.encode()).start()
    try:
        app = make_app(not_covered_graph, **targets(webhook))
        with serve(app) as base, httpx.Client(timeout=30) as client:
            cid = ask(client, base, "Can I run payroll?")
            assert client.post(f"{base}/conversations/{cid}/handoff", json={"turn": 1, "contact": "ada@example.org"}
                               ).status_code == 202
            assert wait_for(lambda: webhook.received, 15)
    finally:
        webhook.stop()
    body = webhook.received[0]["body"]
    assert (body["reason"], body["coverage"], body["citations"]) == ("not_covered", "not_covered", [])
    assert body["transcript"][0]["abstain"] is True


def test_bad_requests_unknown_conversations_and_no_target():
    webhook = WebhookReceiver(SECRET.encode())  # never started: nothing is delivered in this test
    app = make_app(**targets(webhook))
    with serve(app) as base, httpx.Client(timeout=30) as client:
        cid = ask(client, base, "Which fields?")
        url = f"{base}/conversations/{cid}/handoff"
        for body in ({"turn": 1}, {"contact": "a@b.c"}, {"turn": 0, "contact": "a@b.c"}, {"turn": 1, "contact": ""},
                     {"turn": 1, "contact": "   "}, {"turn": 1, "contact": "a@b.c\r\nBcc: x@y.z"},
                     {"turn": 1, "contact": "x" * 321}, {"turn": 1, "contact": "a@b.c", "message": "m" * 2001},
                     {"turn": 1, "contact": "a@b.c", "cc": "x"}, {"turn": "one", "contact": "a@b.c"}, ["a@b.c"]):
            assert client.post(url, json=body).status_code == 422, body
        assert client.post(url, content=b"{", headers={"Content-Type": "application/json"}).status_code == 422
        unknown = client.post(f"{base}/conversations/nope/handoff", json={"turn": 1, "contact": "a@b.c"})
        assert unknown.status_code == 404 and "unknown" in unknown.json()["detail"]
        assert client.post(url, json={"turn": 2, "contact": "a@b.c"}).status_code == 404
        assert app.state.service.state.outbox.deliveries() == []
    off = make_app()
    with serve(off) as base, httpx.Client(timeout=30) as client:
        cid = ask(client, base, "Which fields?")
        response = client.post(f"{base}/conversations/{cid}/handoff", json={"turn": 1, "contact": "a@b.c"})
        assert response.status_code == 409 and "FIELDGUIDE_HANDOFF" in response.json()["detail"]
        page = client.get(base + "/").text
        assert "&quot;handoff&quot;: false" in page  # the page does not offer it


def test_a_repeated_request_is_one_handoff():
    webhook = WebhookReceiver(SECRET.encode()).start()
    try:
        app = make_app(**targets(webhook))
        with serve(app) as base, httpx.Client(timeout=30) as client:
            cid = ask(client, base, "Which fields?")
            ids = {client.post(f"{base}/conversations/{cid}/handoff", json={"turn": 1, "contact": "a@b.c"}
                               ).json()["handoff_id"] for _ in range(3)}
            assert len(ids) == 1
            assert wait_for(lambda: webhook.received, 15)
            time.sleep(0.5)
    finally:
        webhook.stop()
    assert webhook.ids() == list(ids)


def test_receivers_down_for_30_seconds_lose_no_request(aiosmtpd):
    """Both receivers are down while handoffs are posted, and stay down for 30 s: the requests
    wait in the outbox, retried with backoff; once the receivers are up every request arrives,
    exactly once by id, at both."""
    webhook, smtp = WebhookReceiver(SECRET.encode()), SmtpReceiver()  # down
    app = make_app(**targets(webhook, smtp, handoff_retry_max_seconds=2.0))
    outbox = app.state.service.state.outbox
    try:
        with serve(app) as base, httpx.Client(timeout=30) as client:
            expected = []
            for n in range(6):
                cid = ask(client, base, f"Question number {n} about the booking form?")
                response = client.post(f"{base}/conversations/{cid}/handoff", json={"turn": 1, "contact": f"r{n}@x.org"})
                assert response.status_code == 202
                expected.append(response.json()["handoff_id"])
            down_since = time.monotonic()
            time.sleep(max(0.0, 30.0 - (time.monotonic() - down_since)))
            stored = outbox.deliveries()
            assert len(stored) == 12 and all(d.status == "pending" for d in stored)
            assert min(d.attempts for d in stored) >= 4  # retried meanwhile (1, 2, 2, 2, ... s apart)
            assert all(d.last_error for d in stored)
            assert webhook.received == [] and smtp.messages == []
            webhook.start()
            smtp.start()
            assert wait_for(lambda: all(d.status == "delivered" for d in outbox.deliveries()), 30)
            time.sleep(3)  # long enough for any second attempt at a delivered request to show up
    finally:
        webhook.stop()
        smtp.stop()
    assert sorted(webhook.ids()) == sorted(expected) and all(r["signed"] for r in webhook.received)
    assert sorted(smtp.ids()) == sorted(expected)


def test_a_stored_handoff_survives_a_restart_of_the_service():
    webhook = WebhookReceiver(SECRET.encode())
    state_url = fresh_sqlite_url()
    first = make_app(state_url=state_url, **targets(webhook))
    with serve(first) as base, httpx.Client(timeout=30) as client:
        cid = ask(client, base, "Which fields?")
        hid = client.post(f"{base}/conversations/{cid}/handoff", json={"turn": 1, "contact": "a@b.c"}).json()["handoff_id"]
    webhook.start()  # up only once the first service has stopped
    try:
        second = make_app(state_url=state_url, **targets(webhook))
        with serve(second):
            assert wait_for(lambda: webhook.received, 20)
    finally:
        webhook.stop()
    assert webhook.ids() == [hid]


def open_outbox(kind: str, tmp_path, request):
    if kind == "memory":
        return MemoryOutbox()
    if kind == "sqlite":
        return SqliteOutbox(tmp_path / "state.sqlite")
    from fieldguide.service.state.outbox import RedisOutbox
    from fieldguide.service.state.redis import RedisConversationRegistry
    from tests.service.conftest import fresh_redis

    registry = RedisConversationRegistry(fresh_redis(request.getfixturevalue("redis_server")), max_conversations=10,
                                         ttl_seconds=60, max_events=100, timeout=3)
    request.addfinalizer(registry.close)
    return RedisOutbox(registry, retention_days=1)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
def test_the_outbox_leases_claims_and_keeps_what_failed(kind, tmp_path, request):
    outbox = open_outbox(kind, tmp_path, request)
    assert outbox.add("h-1", ["webhook", "email"], {"contact": "a@b.c"}, now=100.0)
    assert not outbox.add("h-1", ["webhook"], {"contact": "someone else"}, now=101.0)  # a repeat: nothing stored
    assert outbox.next_due() == 100.0
    claimed = outbox.claim(100.0, lease_seconds=60, limit=10)
    assert sorted((d.target, d.attempts, d.payload["contact"]) for d in claimed) == [
        ("email", 1, "a@b.c"), ("webhook", 1, "a@b.c")]
    assert outbox.claim(159.0, 60) == []  # leased: nobody else sends them meanwhile
    webhook = next(d for d in claimed if d.target == "webhook")
    email = next(d for d in claimed if d.target == "email")
    outbox.delivered(webhook, 101.0)
    outbox.retry(email, "ConnectError: refused", next_at=105.0)
    assert outbox.next_due() == 105.0 and outbox.claim(104.0, 60) == []
    (again,) = outbox.claim(105.0, 60)
    assert (again.target, again.attempts) == ("email", 2)
    outbox.retry(again, "still down", next_at=200.0, give_up=True)
    assert outbox.next_due() is None and outbox.claim(1e12, 60) == []
    rows = {d.target: d for d in outbox.deliveries()}
    assert (rows["webhook"].status, rows["webhook"].payload, rows["webhook"].delivered_at) == ("delivered", None, 101.0)
    assert (rows["email"].status, rows["email"].last_error, rows["email"].payload) == (
        "failed", "still down", {"contact": "a@b.c"})  # kept for the docs team to see and resend
    outbox.expire(before=100.5)
    assert outbox.deliveries() == []
    outbox.close()


def test_the_signature_is_the_bodys_hmac_sha256():
    body = b'{"id":"h-1"}'
    assert handoff.sign(b"secret", body) == "sha256=" + hmac.new(b"secret", body, hashlib.sha256).hexdigest()
    assert handoff.sign(b"secret", body) != handoff.sign(b"other", body)


def test_retries_back_off_to_the_cap():
    delays = [handoff.retry_delay(n, cap=10.0) for n in range(1, 8)]
    for got, base in zip(delays, [1, 2, 4, 8, 10, 10, 10]):
        assert 0.8 * base <= got <= 1.2 * base


def test_targets_configured_halfway_are_refused():
    for values, message in (({"handoff_webhook_url": "http://127.0.0.1:9/h"}, "FIELDGUIDE_HANDOFF_SECRET"),
                            ({"handoff_webhook_url": "ftp://x/h", "handoff_secret": "s"}, "http"),
                            ({"handoff_smtp_url": "smtp://127.0.0.1:25"}, "FIELDGUIDE_HANDOFF_EMAIL_TO"),
                            ({"handoff_smtp_url": "smtp://127.0.0.1:25", "handoff_email_to": SUPPORT},
                             "FIELDGUIDE_HANDOFF_EMAIL_FROM"),
                            ({"handoff_smtp_url": "mail://x", "handoff_email_to": SUPPORT,
                              "handoff_email_from": SENDER}, "smtp://"),
                            ({"handoff_smtp_url": "smtp://x", "handoff_email_to": "not an address",
                              "handoff_email_from": SENDER}, "not an email address")):
        with pytest.raises(FieldguideError, match=message):
            handoff.targets_from_settings(Settings(**values))
    smtp = handoff.targets_from_settings(Settings(
        handoff_smtp_url="smtps://us%40er:p%3Ass@mail.example.com", handoff_email_to=f"{SUPPORT}, b@example.com",
        handoff_email_from=SENDER)).smtp
    assert (smtp.host, smtp.port, smtp.tls, smtp.username, smtp.password, smtp.to) == (
        "mail.example.com", 465, "tls", "us@er", "p:ss", (SUPPORT, "b@example.com"))
    assert handoff.targets_from_settings(Settings()).names() == []
