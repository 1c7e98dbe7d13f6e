"""The reminders' store: a failed reminder retried by hand goes out on the next tick."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg

from crontick.admin.reminders import store
from tests.admin.store_support import run
from tests.support.core_jobs import db_now, settings_for, tick


def test_a_failed_reminder_retried_by_hand_goes_out_on_the_next_tick(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    booking = conn.execute(  # as text: reminder_sends.booking_id holds a source's id whatever its type
        "insert into bookings (customer_name, starts_at) values ('Ada', now() + interval '3 hours') returning id::text"
    ).fetchone()[0]  # type: ignore[index]
    conn.execute(
        "insert into reminder_sends (booking_id, kind, channel, status, attempts, max_attempts, last_error)"
        " values (%(b)s, '24h', 'console', 'failed', 4, 4, 'HTTP 500')",
        {"b": booking},
    )
    [due] = run(database_url, store.due_reminders)
    assert due["booking_id"] == booking and due["sends"][0]["status"] == "failed"
    [send], _ = run(database_url, lambda c: store.list_reminders(c, status="failed"))
    assert (send["booking_id"], send["kind"]) == (booking, "24h")
    result = run(database_url, lambda c: store.retry_reminder(c, booking, "24h", role="admin"))
    assert result.ok and result.row is not None and result.row["max_attempts"] == 5
    summary = tick(database_url, settings_for(database_url), now=db_now(conn) + timedelta(seconds=1))
    assert summary.reminders.sent == 1
    again = run(database_url, lambda c: store.retry_reminder(c, booking, "24h", role="admin"))
    assert (again.ok, again.error) == (False, "conflict") and "'sent'" in again.detail
