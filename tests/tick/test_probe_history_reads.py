"""Looking for due reminders reads the bookings in the reminder window, not the send log or the bookings ever made.

With 20,000 reminders sent for past bookings, a tick's probe (the next reminder) and the reminder
claim must read about as many rows as there are upcoming bookings. Counted, not timed: the
transaction's own table statistics (pg_stat_xact_user_tables) say how many rows each statement
read from each table, and how (a sequential scan, or an index). A plan that hashes reminder_sends
or walks the bookings index from its start reads all 20,000.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

from crontick import db
from crontick.reminders import send
from crontick.settings import Settings
from crontick.tick import probe
from crontick.tick.duty import when
from tests.support.constants import TEST_SECRET

HISTORY = 20_000
UPCOMING = 50  # inside the 24 h window, already reminded
# Rows an index may hand over beyond one per upcoming booking and kind: the edges of a range, the
# first booking past the window, a late booking.
SLACK = 20

SEED = (
    "insert into bookings (customer_name, starts_at) select 'past ' || g,"
    " now() - interval '70 days' + g * interval '5 minutes' from generate_series(1, %(history)s) g",
    "insert into bookings (customer_name, starts_at) select 'soon ' || g,"
    " now() + interval '2 hours' + g * interval '20 minutes' from generate_series(1, %(upcoming)s) g",
    "insert into bookings (customer_name, starts_at) select 'later ' || g,"
    " now() + interval '30 hours' + g * interval '1 hour' from generate_series(1, 10) g",
    "insert into reminder_sends (booking_id, kind, channel, status, sent_at)"
    " select id, '24h', 'console', 'sent', now() from bookings where starts_at < now() + interval '24 hours'",
)


def settings(url: str) -> Settings:
    return Settings.from_env({"DATABASE_URL": url, "CRON_SECRET": TEST_SECRET, "CRONTICK_REMINDER_KINDS": "24h,1h"})


@pytest.fixture
def history(database_url: str) -> str:
    with psycopg.connect(database_url, autocommit=True) as conn:
        for statement in SEED:
            conn.execute(statement, {"history": HISTORY, "upcoming": UPCOMING})
        # '1h' reminders for the same bookings: a second kind's rows in the log, not yet due.
        conn.execute(
            "insert into reminder_sends (booking_id, kind, channel, status, sent_at)"
            " select booking_id, '1h', 'console', 'sent', now() from reminder_sends where kind = '24h'"
        )
        conn.execute("vacuum analyze bookings, reminder_sends")
    return database_url


def rows_read(step: Any, url: str) -> tuple[Any, dict[str, tuple[int, int]]]:
    """What `step(conn)` returned, and per table (sequential scans, rows read), in a rolled-back transaction."""

    async def go() -> tuple[Any, dict[str, tuple[int, int]]]:
        conn = await db.connect(url)
        try:
            async with conn.transaction(force_rollback=True):
                result = await step(conn)
                cur = await conn.execute(
                    "select relname, seq_scan, seq_tup_read + coalesce(idx_tup_fetch, 0) from pg_stat_xact_user_tables"
                    " where relname in ('bookings', 'reminder_sends')"
                )
                return result, {name: (scans, rows) for name, scans, rows in await cur.fetchall()}
        finally:
            await conn.close()

    return asyncio.run(go())


def test_the_probe_reads_the_window_not_the_send_log(history: str) -> None:
    s = settings(history)
    found, read = rows_read(lambda conn: probe.look(conn, s, None, "test", {}), history)
    # Nothing due; the next reminder: the first booking past the window, 24 h before its start.
    with psycopg.connect(history) as conn:
        [(first_later,)] = conn.execute("select min(starts_at) from bookings where customer_name like 'later %'")
    reminders_found = found.duties["reminders"]
    assert not reminders_found["due"] and when(reminders_found, "next_at") == first_later - timedelta(hours=24)
    assert read["reminder_sends"][0] == 0 and read["bookings"][0] == 0, read  # no sequential scan
    assert read["reminder_sends"][1] <= 2 * UPCOMING + SLACK, read
    assert read["bookings"][1] <= 2 * UPCOMING + SLACK, read


def test_the_claim_reads_the_window_not_every_booking(history: str) -> None:
    with psycopg.connect(history, autocommit=True) as conn:
        conn.execute("insert into bookings (customer_name, starts_at) values ('late', now() + interval '3 hours')")
    s = settings(history)

    async def claim(conn: psycopg.AsyncConnection[Any]) -> list[Any]:
        now: datetime = (await (await conn.execute("select now()")).fetchone())[0]  # type: ignore[index]
        claimed, lost_race = await send.claim(conn, s, now)
        assert not lost_race
        return claimed

    claimed, read = rows_read(claim, history)
    assert [(c.kind, c.customer_name) for c in claimed] == [("24h", "late")]
    assert read["reminder_sends"][0] == 0 and read["bookings"][0] == 0, read
    assert read["reminder_sends"][1] <= 2 * UPCOMING + SLACK, read
    assert read["bookings"][1] <= 2 * UPCOMING + SLACK, read


def test_a_reminder_already_sent_past_the_window_is_walked_over(database_url: str) -> None:
    """Leads that changed (a longer one before) can leave rows for bookings past now + lead: the next is the first without."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "insert into bookings (customer_name, starts_at) values ('sent early', now() + interval '30 hours'),"
            " ('next', now() + interval '31 hours')"
        )
        conn.execute(
            "insert into reminder_sends (booking_id, kind, channel, status, sent_at)"
            " select id, '24h', 'console', 'sent', now() from bookings where customer_name = 'sent early'"
        )
        [(next_at,)] = conn.execute("select starts_at - interval '24 hours' from bookings where customer_name = 'next'")
    s = Settings.from_env({"DATABASE_URL": database_url, "CRON_SECRET": TEST_SECRET})
    found, _ = rows_read(lambda conn: probe.look(conn, s, None, "test", {}), database_url)
    assert when(found.duties["reminders"], "next_at") == next_at and not found.duties["reminders"]["due"]
