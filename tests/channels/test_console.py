"""The console channel prints each message like Django's console email backend and calls no provider."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest

from tests.support.reminders import NOW, Provider, add_bookings, send_of, settings_for, tick


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
