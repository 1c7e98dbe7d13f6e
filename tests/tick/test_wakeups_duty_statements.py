"""What a wake-up booking costs a whole tick, counted on the wire (tests/support/wire.py) against a real PostgreSQL and
the QStash stand-in (issue 35): one statement and one HTTP call to book, none when the probe's bookings show the
instant booked already, and with no waker the very statements (and probe answer) of a tick without the feature."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

import crontick
from crontick.settings import Settings
from crontick.tick.pipeline import run_tick
from tests.support import noop_jobs
from tests.support.credentials import QSTASH_CURRENT
from tests.support.qstash_server import qstash_stand_in
from tests.support.wire import traced

TOKEN = "qstash-token-for-the-stand-in"


def _tick(url: str, settings: Settings) -> list[str]:
    _, names = traced(url, lambda conn: run_tick(conn, settings, source="test"))
    return names


def test_a_booking_adds_one_statement_and_a_booked_instant_none(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    now = conn.execute("select now()").fetchone()[0]
    crontick.enqueue(conn, noop_jobs.NOOP, {}, run_after=now + timedelta(hours=1))
    without = _tick(database_url, Settings(database_url=database_url))
    with qstash_stand_in(TOKEN, QSTASH_CURRENT, held=True) as stand_in:
        waker = Settings(database_url=database_url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                         public_url="http://127.0.0.1:9")  # fmt: skip
        booking = _tick(database_url, waker)
        calls = len(stand_in.published)
        again = _tick(database_url, waker)
    assert without == ["tick_probe"]  # idle: the probe is the whole tick
    assert booking == [*without, "wakeup_claim"] and calls == 1
    assert again == without and len(stand_in.published) == 1  # the probe's rows showed it booked: no call


def test_the_probe_reads_bookings_only_when_the_wakeups_duty_asks(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(
        "insert into crontick.crontick_wakeups (instant, provider) values (now() + interval '1 hour', 'qstash')"
    )

    def duties(asks: dict[str, Any]) -> dict[str, Any]:
        row = conn.execute(
            "select duties from crontick.crontick_tick_probe(null, 0, interval '1 minute', 'test', %s, null, null, %s)",
            (Jsonb({"jobs": {}, "reminders": {}}), Jsonb(asks)),
        ).fetchone()
        assert row is not None
        return row[0]  # type: ignore[no-any-return]

    assert "wakeups" not in duties({})  # no waker: nothing read, nothing returned
    (booking,) = duties({"wakeups": {"bookings": 16}})["wakeups"]["bookings"]
    assert (booking["status"], booking["generation"], booking["served"]) == ("booked", 1, False)
