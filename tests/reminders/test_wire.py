"""Each channel's wire format as its provider documents it: method, path, auth, body encoding, idempotency header."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.support.reminders import (
    EMAIL_KEY,
    NOW,
    TWILIO_SID,
    TWILIO_TOKEN,
    WEBHOOK_SECRET,
    Provider,
    Received,
    add_bookings,
    send_of,
    settings_for,
    tick,
)

TEXT = "Hi Zoë, a reminder: your appointment is tomorrow, Tue 1 Dec at 09:30 (Amsterdam time)."


def send_one(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider, channel: str
) -> tuple[int, Received]:
    [booking] = add_bookings(
        conn,
        [
            (
                "Zoë Ångström",
                "zoe@example.com",
                "+31612345678",
                NOW + timedelta(hours=20, minutes=30),
                "Europe/Amsterdam",
                "confirmed",  # 09:30 in Amsterdam on Tue 1 Dec
            )
        ],
    )
    assert tick(database_url, settings_for(database_url, provider, channel), NOW).reminders.sent == 1
    [received] = provider.requests
    return booking, received


def test_email_is_a_resend_style_post_with_bearer_key_json_and_idempotency_key(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking, r = send_one(database_url, conn, provider, "email")
    assert (r.method, r.path) == ("POST", "/emails")
    assert r.headers["authorization"] == f"Bearer {EMAIL_KEY}"
    assert r.headers["content-type"] == "application/json"
    assert r.headers["idempotency-key"] == f"reminder:{booking}:24h"
    assert r.json == {
        "from": "Clinic <reminders@clinic.example>",
        "to": ["zoe@example.com"],
        "subject": "Reminder: your appointment tomorrow at 09:30",
        "text": TEXT,
    }
    row = send_of(conn, booking)
    assert row["channel"] == "email" and row["provider_message_id"]  # Resend's {"id": …} is kept
    assert row["idempotency_key"] == f"reminder:{booking}:24h"


@pytest.mark.parametrize(
    ("channel", "to", "sender"),
    [
        ("sms", "+31612345678", "+15005550006"),
        ("whatsapp", "whatsapp:+31612345678", "whatsapp:+14155238886"),
    ],
)
def test_sms_and_whatsapp_are_twilio_messages_with_basic_auth_and_a_utf8_form(
    channel: str, to: str, sender: str, database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking, r = send_one(database_url, conn, provider, channel)
    assert (r.method, r.path) == ("POST", f"/2010-04-01/Accounts/{TWILIO_SID}/Messages.json")
    assert r.headers["authorization"] == "Basic " + base64.b64encode(f"{TWILIO_SID}:{TWILIO_TOKEN}".encode()).decode()
    assert r.headers["content-type"] == "application/x-www-form-urlencoded"
    assert "idempotency-key" not in r.headers  # Twilio has none: why an ambiguous SMS ends 'unknown'
    assert r.form == {"To": to, "From": sender, "Body": TEXT}
    assert b"Zo%C3%AB" in r.body  # UTF-8, percent-encoded
    assert send_of(conn, booking)["provider_message_id"].startswith("SM")


def test_webhook_is_signed_per_standard_webhooks_and_names_the_booking(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking, r = send_one(database_url, conn, provider, "webhook")
    assert (r.method, r.path) == ("POST", "/hooks/reminders")
    assert r.headers["content-type"] == "application/json"
    assert r.headers["webhook-id"] == f"reminder:{booking}:24h"
    payload = Webhook(WEBHOOK_SECRET).verify(r.body, r.headers)  # raises unless the signature is valid
    assert payload["type"] == "booking.reminder"
    assert payload["data"]["kind"] == "24h"
    assert payload["data"]["booking"] == {
        "id": booking,
        "customer_name": "Zoë Ångström",
        "email": "zoe@example.com",
        "phone": "+31612345678",
        "starts_at": "2026-12-01T08:30:00+00:00",
        "starts_at_local": "2026-12-01T09:30:00+01:00",
        "time_zone": "Europe/Amsterdam",
        "language": None,  # crontick's own bookings have no language column
    }
    assert payload["data"]["message"]["text"] == TEXT
    with pytest.raises(WebhookVerificationError):
        Webhook(WEBHOOK_SECRET).verify(r.body.replace(b"24h", b"1h"), r.headers)


def test_console_prints_the_message_like_djangos_console_email_backend(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider, capsys: pytest.CaptureFixture[str]
) -> None:
    [booking] = add_bookings(
        conn, [("Ada Lovelace", "ada@example.com", None, NOW + timedelta(hours=2), "Asia/Tokyo", "confirmed")]
    )
    assert tick(database_url, settings_for(database_url, provider, "console"), NOW).reminders.sent == 1
    out = capsys.readouterr().out
    headers, _, rest = out.partition("\n\n")
    assert "Subject: Reminder: your appointment today at 23:00" in headers.splitlines()
    assert "To: ada@example.com" in headers.splitlines()
    assert f"Idempotency-Key: reminder:{booking}:24h" in headers.splitlines()
    assert 'Content-Type: text/plain; charset="utf-8"' in headers.splitlines()
    assert (
        rest == "Hi Ada, a reminder: your appointment is today, Mon 30 Nov at 23:00 (Tokyo time).\n\n" + "-" * 79 + "\n"
    )
    assert provider.requests == [] and send_of(conn, booking)["status"] == "sent"


def test_webhook_body_is_the_same_bytes_on_every_attempt(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    """webhook-id and body stay fixed across retries; only the timestamp and signature change."""
    from werkzeug import Response

    provider.behave = lambda r, n: Response("busy", 503) if n == 1 else Response(status=204)
    [booking] = add_bookings(conn, [("Ada", None, None, NOW + timedelta(hours=3), "UTC", "confirmed")])
    settings = settings_for(database_url, provider, "webhook")
    tick(database_url, settings, NOW)
    tick(database_url, settings, NOW + timedelta(minutes=2))
    first, second = provider.requests
    assert first.body == second.body and first.headers["webhook-id"] == second.headers["webhook-id"]
    assert json.loads(second.body)["timestamp"] == NOW.isoformat()  # the event time: the first claim
    assert Webhook(WEBHOOK_SECRET).verify(second.body, second.headers)
    assert send_of(conn, booking)["status"] == "sent"
