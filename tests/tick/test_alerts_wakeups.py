"""The alert after repeated failed wake-up bookings (sql/functions/wakeup_failed.sql, crontick.tick.alerts): raised on
the third failed call within an hour, once an hour, and sent by the very tick that raised it, over real HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import psycopg

from crontick.tick import alerts as alerts_module
from tests.support import noop_jobs
from tests.support.http_checks import AUTH, TICK
from tests.support.reminders import Provider
from tests.tick.alerts_support import ALERT_PATH, ALERT_SECRET, alerts, received_alerts, verified
from tests.tick.support import waking_app


def test_the_third_failed_booking_within_an_hour_raises_one_alert_sent_at_once(
    database_url: str, conn: psycopg.Connection[Any], receiver: Provider
) -> None:
    conn.execute("insert into jobs (type, payload, run_after) values (%s, '{}', now() + interval '1 hour')",
                 (noop_jobs.NOOP,))  # fmt: skip
    webhook = {"alert_webhook_url": receiver.url + ALERT_PATH, "alert_webhook_secret": ALERT_SECRET}
    with waking_app(database_url, **webhook) as (url, stand_in):
        stand_in.fail_next.extend([500, 500, 500, 500])
        answers = [httpx.post(url + TICK, headers=AUTH, timeout=30) for _ in range(3)]
        sent_by_the_third = len(received_alerts(receiver))  # its probe saw no alert due: it sent what it raised
        answers.append(httpx.post(url + TICK, headers=AUTH, timeout=30))
        assert [a.status_code for a in answers] == [200] * 4
        assert [a.json()["wakeups"]["failed"] for a in answers] == [1, 1, 1, 1]
    raised = [a for a in alerts(conn) if a["event"] == "wakeup_failed"]
    assert sent_by_the_third == 1
    assert len(raised) == 1 or len({a["occurred_at"] for a in raised}) == len(raised)  # once an hour
    assert raised[0]["body"]["failures"] == 3 and raised[0]["status"] == "sent"
    body = verified(received_alerts(receiver)[0])
    assert body["event"] == "wakeup_failed" and "3 wake-up bookings failed" in body["text"]
    assert "500" in body["error"]


def test_two_failed_bookings_raise_no_alert(database_url: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute("insert into jobs (type, payload, run_after) values (%s, '{}', now() + interval '1 hour')",
                 (noop_jobs.NOOP,))  # fmt: skip
    with waking_app(database_url) as (url, stand_in):
        stand_in.fail_next.extend([500, 500])
        for _ in range(2):
            assert httpx.post(url + TICK, headers=AUTH, timeout=30).json()["wakeups"]["failed"] == 1
    assert [a for a in alerts(conn) if a["event"] == "wakeup_failed"] == []


def test_the_alert_reads_as_one_line() -> None:
    line = alerts_module.text("wakeup_failed", {"failures": 3, "error": "QStash answered 500 at https://qstash.io"})
    assert line.startswith("crontick: 3 wake-up bookings failed within an hour (CRONTICK_WAKER)")
    assert "https[:]//qstash[.]io" in line
