"""Helpers for the alert tests: settings pointing at the receiver, alert rows, requests by path."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from standardwebhooks.webhooks import Webhook

from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.reminders import Provider, Received

ALERT_SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
ALERT_PATH = "/alerts/T000/B000/not-a-real-token"


def alert_settings(url: str, receiver: Provider, **changes: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": url,
        "cron_secret": TEST_SECRET,
        "alert_webhook_url": receiver.url + ALERT_PATH,
        "alert_webhook_secret": ALERT_SECRET,
        "delivery_timeout_seconds": 5.0,
    }
    values.update(changes)
    return Settings(**values)


def alerts(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    return conn.cursor(row_factory=dict_row).execute("select * from crontick_alerts order by id").fetchall()


def received_alerts(receiver: Provider) -> list[Received]:
    with receiver._lock:  # the server's threads append as requests arrive
        return [r for r in receiver.requests if r.path == ALERT_PATH]


def verified(received: Received) -> dict[str, Any]:
    """The body, after the standardwebhooks library (the receiver's side) has checked its signature."""
    headers = {k: v for k, v in received.headers.items() if k.startswith("webhook-")}
    body: dict[str, Any] = Webhook(ALERT_SECRET).verify(received.body, headers)
    return body


def make_alerts_due(conn: psycopg.Connection[Any], now: datetime) -> None:
    """Fake time for a retry: every pending alert's backoff has passed at `now`."""
    conn.execute("update crontick_alerts set next_attempt_at = %(now)s where status = 'pending'", {"now": now})
