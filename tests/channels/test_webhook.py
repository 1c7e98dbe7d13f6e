"""The webhook channel's wire format: JSON signed per Standard Webhooks, the same bytes on every attempt."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.channels.sending import TEXT, send_one
from tests.support.reminders import NOW, WEBHOOK_SECRET, Provider, add_bookings, send_of, settings_for, tick


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
