"""The email channel's wire format as Resend documents it: POST /emails, bearer key, JSON body, Idempotency-Key."""

from __future__ import annotations

from typing import Any

import psycopg

from tests.channels.sending import TEXT, send_one
from tests.support.reminders import EMAIL_KEY, Provider, send_of


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
