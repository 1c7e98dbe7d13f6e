"""The sms and whatsapp channels' wire format as Twilio documents it: basic auth, a UTF-8 form, no idempotency key."""

from __future__ import annotations

import base64
from typing import Any

import psycopg
import pytest

from tests.channels.sending import TEXT, send_one
from tests.support.reminders import TWILIO_SID, TWILIO_TOKEN, Provider, send_of


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
