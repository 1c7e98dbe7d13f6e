"""crontick.tick.reminders_duty: sends what the probe found due, asks the probe with each kind's window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from crontick.reminders.window import ReminderCounts
from crontick.settings import Settings
from crontick.tick import reminders_duty
from crontick.tick.duty import Tick
from crontick.tick.pacing import Pacing
from tests.support.constants import TEST_SECRET
from tests.support.waking import posted_tick, waking_app
from tests.tick.support import DutyRun, settings_for

DUTY = reminders_duty.DUTY


def test_it_asks_the_probe_with_each_kind_and_its_window_in_seconds_longest_first() -> None:
    s = Settings(database_url="postgresql:///x", cron_secret=TEST_SECRET, reminder_kinds=("1h", "24h"))
    tick = Tick(None, s, Pacing(), lambda: 0.0, 1.0, None)  # type: ignore[arg-type]
    asked = DUTY.asks(tick, datetime.now(UTC))
    assert asked == {"windows": [["24h", 86400.0, 3600.0], ["1h", 3600.0, 0.0]]}


def book(conn: psycopg.Connection[Any], starts_in: timedelta) -> None:
    conn.execute("insert into bookings (customer_name, starts_at) values ('Ada', now() + %(s)s)", {"s": starts_in})


def test_due_it_sends_and_counts_in_the_reminders_two_statements(database_url: str, duty_run: DutyRun) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        book(conn, timedelta(hours=2))
        book(conn, timedelta(hours=3))
    counts, _, statements = duty_run(DUTY, {"reminders": {"due": True}})
    assert counts == ReminderCounts(sent=2)
    assert statements == ["reminder_claim_due", "reminder_record_outcomes"]


def test_not_due_or_left_to_a_later_tick_it_sends_nothing_and_costs_no_statement(
    database_url: str, duty_run: DutyRun
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        book(conn, timedelta(hours=2))
    assert duty_run(DUTY, {"reminders": {"due": False}})[::2] == (ReminderCounts(), [])
    assert duty_run(DUTY, {"reminders": {"due": True}}, send_reminders=False)[::2] == (ReminderCounts(), [])
    assert duty_run(DUTY, {})[::2] == (ReminderCounts(), [])  # a claim took the probe's place: reminders wait


def test_a_stopped_source_is_counted_as_its_error(duty_run: DutyRun) -> None:
    stopped = {"reminders": {"due": False, "next_at": None, "error": "CRONTICK_REMINDER_SOURCE: expected a, got: b"}}
    counts, _, statements = duty_run(DUTY, stopped)
    assert counts == ReminderCounts(error="CRONTICK_REMINDER_SOURCE: expected a, got: b") and statements == []


def test_it_names_its_next_time_only_when_it_was_not_due(database_url: str) -> None:
    tick = Tick(None, settings_for(database_url), Pacing(), lambda: 0.0, 1.0, None)  # type: ignore[arg-type]
    at = "2026-12-05T08:00:00.5+00:00"
    tick.answer = {"reminders": {"due": False, "next_at": at}}
    assert DUTY.next_at(tick) == datetime(2026, 12, 5, 8, 0, 0, 500000, tzinfo=UTC)
    tick.answer = {"reminders": {"due": True, "next_at": at}}
    assert DUTY.next_at(tick) is None  # sent now, no waker: its next time shows in the next probe
    tick.found_next["reminders"] = later = datetime(2026, 12, 5, 9, tzinfo=UTC)
    assert DUTY.next_at(tick) == later  # with a waker, the run read it after sending


def test_without_a_waker_a_tick_that_sends_reads_no_next_time(database_url: str, duty_run: DutyRun) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        book(conn, timedelta(hours=3))
    counts, _, statements = duty_run(DUTY, {"reminders": {"due": True}})
    assert counts == ReminderCounts(sent=1) and "reminder_next_due" not in statements


def test_with_a_waker_a_tick_that_sends_books_the_next_reminder(database_url: str) -> None:
    """A booking in 3 hours: its 24h reminder is due now and goes out; its 2h one falls due in an hour. The tick
    books that hour through the waker (QStash stand-in): without it the next reminder waited for the safety net."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        book(conn, timedelta(hours=3))
        starts_at = conn.execute("select starts_at from bookings").fetchone()[0]
    with waking_app(database_url, reminder_kinds=("24h", "2h")) as (url, stand_in):
        body = posted_tick(url)
    assert body["reminders"]["sent"] == 1 and body["wakeups"] == {"booked": 1, "failed": 0}
    assert datetime.fromisoformat(body["next_due_at"]) == starts_at - timedelta(hours=2)
    (published,) = stand_in.published
    assert int(published["headers"]["upstash-not-before"]) == int(-(-(starts_at - timedelta(hours=2)).timestamp() // 1))
