"""Reminder and silence alerts: one per failed or unknown reminder and one per silence, sent to a real receiver."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from werkzeug import Response

from crontick import db
from crontick.tick.pipeline import run_tick
from tests.support.reminders import NOW, Provider, Received, add_bookings, make_settings, settings_values, tick
from tests.tick.alerts_support import ALERT_PATH, ALERT_SECRET, alerts, received_alerts, verified


def reminder_settings(url: str, receiver: Provider, channel: str = "webhook") -> Any:
    return make_settings(
        settings_values(
            url,
            receiver.url,
            channel,
            alert_webhook_url=receiver.url + ALERT_PATH,
            alert_webhook_secret=ALERT_SECRET,
        )
    )


def refuse_reminders(received: Received, n: int) -> Response:
    """The reminder endpoint refuses (400: never retried); the alert endpoint takes alerts."""
    if received.path == ALERT_PATH:
        return Response("ok", 200)
    return Response('{"error": "unknown customer"}', 400, content_type="application/json")


def test_a_reminder_failing_for_good_raises_one_alert(
    database_url: str, conn: psycopg.Connection[Any], receiver: Provider
) -> None:
    receiver.behave = refuse_reminders
    [booking] = add_bookings(
        conn, [("Ada Lovelace", "ada@example.com", None, NOW + timedelta(hours=3), "UTC", "confirmed")]
    )
    settings = reminder_settings(database_url, receiver)
    first = tick(database_url, settings, NOW)
    assert first.reminders.failed == 1
    for minutes in (1, 10, 20):  # closer than the silence threshold (2 x 15 min)
        tick(database_url, settings, NOW + timedelta(minutes=minutes))
    [sent] = received_alerts(receiver)
    body = verified(sent)
    assert body["event"] == "reminder_failed" and body["booking_id"] == booking and body["kind"] == "24h"
    assert body["channel"] == "webhook" and "HTTP 400" in body["error"]
    assert body["text"].startswith(f"crontick: the 24h reminder for booking {booking} failed for good over webhook: ")
    assert [a["status"] for a in alerts(conn)] == ["sent"]


def test_a_reminder_left_unknown_raises_one_alert(
    database_url: str, conn: psycopg.Connection[Any], receiver: Provider
) -> None:
    [booking] = add_bookings(conn, [("Ada", None, "+31612345678", NOW + timedelta(hours=3), "UTC", "confirmed")])
    # A tick died mid-call on SMS (no idempotency key): the next claim settles the send as unknown.
    conn.execute(
        "insert into reminder_sends (booking_id, kind, channel, status, locked_until, created_at, updated_at)"
        " values (%(b)s, '24h', 'sms', 'sending', %(t)s, %(t)s, %(t)s)",
        {"b": booking, "t": NOW - timedelta(minutes=5)},
    )
    settings = reminder_settings(database_url, receiver, channel="sms")
    assert tick(database_url, settings, NOW).reminders.unknown == 1
    tick(database_url, settings, NOW + timedelta(minutes=5))
    [sent] = received_alerts(receiver)
    body = verified(sent)
    assert body["event"] == "reminder_unknown" and body["booking_id"] == booking and body["channel"] == "sms"
    assert "may not have reached the customer" in body["text"]
    assert [r.path for r in receiver.requests] == [ALERT_PATH]  # the SMS itself was not resent


class LogLines(logging.Handler):
    """Collects crontick's log lines, parsed: each must be one JSON object."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.events.append(json.loads(record.getMessage()))


def test_the_first_tick_after_a_silence_logs_and_alerts_once(
    database_url: str, conn: psycopg.Connection[Any], receiver: Provider
) -> None:
    lines = LogLines()
    logging.getLogger("crontick").addHandler(lines)
    settings = reminder_settings(database_url, receiver)
    tick(database_url, settings, NOW)
    tick(database_url, settings, NOW + timedelta(minutes=15))  # on time: no silence
    assert received_alerts(receiver) == []
    silent_for = 3 * 3600 + 20 * 60
    tick(database_url, settings, NOW + timedelta(minutes=15, seconds=silent_for))
    tick(database_url, settings, NOW + timedelta(minutes=30, seconds=silent_for))
    [sent] = received_alerts(receiver)
    body = verified(sent)
    assert body["event"] == "scheduler_silent" and body["silent_seconds"] == pytest.approx(silent_for, abs=1)
    assert body["silent_after_seconds"] == 1800
    assert body["text"].startswith("crontick: no tick ran for 3 h 20 min (alerting after 30 min)")
    logging.getLogger("crontick").removeHandler(lines)
    silent = [e for e in lines.events if e["event"] == "scheduler_silent"]
    assert silent == [{"event": "scheduler_silent", "silent_seconds": silent_for, "silent_after_seconds": 1800}]


def test_concurrent_ticks_after_one_silence_raise_one_alert(
    database_url: str, conn: psycopg.Connection[Any], receiver: Provider
) -> None:
    settings = reminder_settings(database_url, receiver)
    tick(database_url, settings, NOW)
    later = NOW + timedelta(hours=2)

    async def together() -> None:
        conns = [await db.connect(database_url) for _ in range(6)]
        try:
            await asyncio.gather(*(run_tick(c, settings, now=later, source="test") for c in conns))
        finally:
            for c in conns:
                await c.close()

    asyncio.run(together())
    tick(database_url, settings, later + timedelta(minutes=15))
    assert [a["event"] for a in alerts(conn)] == ["scheduler_silent"]
    assert len(received_alerts(receiver)) == 1


def test_the_very_first_tick_is_no_silence(
    database_url: str, conn: psycopg.Connection[Any], receiver: Provider
) -> None:
    tick(database_url, reminder_settings(database_url, receiver), NOW)
    assert alerts(conn) == []
