"""The admin store's reads: capped counts, hourly figures from ticks, tick gaps, reminders, timeouts, settings."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest

from crontick.admin import store
from crontick.errors import BadCursor, ConfigError, CrontickError, QueryTimeout
from crontick.settings import Settings
from tests.admin.api_support import insert_jobs
from tests.admin.store_support import run
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import db_now, settings_for, tick


def test_counts_are_capped_and_hourly_figures_come_from_the_ticks(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute("insert into jobs (type, payload, status) select 't', '{}', 'done' from generate_series(1, 10050)")
    insert_jobs(conn, 3, status="pending")
    conn.execute("update jobs set run_after = now() - interval '90 seconds' where status = 'pending'")
    conn.execute(
        "insert into crontick_ticks (started_at, finished_at, source, summary) values"
        " (now() - interval '3 hours', now() - interval '3 hours', 't', '{\"jobs\": {\"succeeded\": 5, \"failed\": 2}}'),"
        " (now() - interval '3 hours', now() - interval '3 hours', 't', '{\"jobs\": {\"succeeded\": 1, \"failed\": 0}}'),"
        " (now() - interval '30 hours', now() - interval '30 hours', 't', '{\"jobs\": {\"succeeded\": 99}}')"
    )
    stats = run(database_url, store.stats)
    assert stats["jobs"] == {"pending": 3, "running": 0, "done": 10_001, "failed": 0, "cancelled": 0, "waiting": 0}
    assert stats["capped"]["done"] and not stats["capped"]["pending"]
    assert 89 < stats["oldest_due_seconds"] < 120
    assert [(h["done"], h["failed"], h["ticks"]) for h in stats["hourly"]] == [(6, 2, 2)]
    assert stats["stale"] is True  # the last tick was 3 hours ago, over 2 x 15 minutes


def test_a_tick_makes_the_scheduler_fresh_and_gaps_are_flagged(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(
        "insert into crontick_ticks (started_at, finished_at, source, summary)"
        " select now() - g * interval '1 minute', now() - g * interval '1 minute', 't', '{}' from unnest(array[95, 80, 10]) g"
    )
    tick(database_url, settings_for(database_url), now=db_now(conn))
    assert run(database_url, store.stats)["stale"] is False
    rows, cursor = run(database_url, lambda c: store.list_ticks(c, limit=3, expected_interval_seconds=900))
    assert cursor is not None
    assert [r["gap_flagged"] for r in rows] == [False, True, False]  # 10 min, 70 min, 15 min
    [oldest], end = run(database_url, lambda c: store.list_ticks(c, before_id=store.decode_cursor(cursor)))
    assert (oldest["gap_seconds"], oldest["gap_flagged"], end) == (None, False, None)


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


def test_a_read_blocked_past_its_timeout_raises_query_timeout(database_url: str) -> None:
    with psycopg.connect(database_url) as locker:
        locker.execute("lock table jobs in access exclusive mode")
        with pytest.raises(QueryTimeout, match="expected an answer within 2s"):
            run(database_url, lambda c: store.list_jobs(c))


def test_cursors_round_trip_and_foreign_ones_are_refused() -> None:
    assert store.decode_cursor(store.encode_cursor(1234)) == 1234
    assert store.decode_cursor(None) is None
    for bad in ("nope", "djI6MQ", store.encode_cursor(1)[:-1] + "!", "dj E6MA"):
        with pytest.raises(BadCursor):
            store.decode_cursor(bad)


def test_a_viewer_cannot_act_even_through_the_store(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [job_id] = insert_jobs(conn, 1)
    with pytest.raises(CrontickError, match="expected admin or cli"):
        run(database_url, lambda c: store.retry_job(c, job_id, role="viewer"))


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"CRONTICK_ADMIN_SECRET": TEST_SECRET},
            "CRONTICK_ADMIN_SECRET: expected a secret of its own, got the value of CRON_SECRET",
        ),
        ({"CRONTICK_ADMIN_VIEWER_SECRET": TEST_SECRET}, "CRONTICK_ADMIN_VIEWER_SECRET: expected a secret of its own"),
        (
            {"CRONTICK_ADMIN_SECRET": "a" * 40, "CRONTICK_ADMIN_VIEWER_SECRET": "a" * 40},
            "CRONTICK_ADMIN_VIEWER_SECRET: expected a secret other than CRONTICK_ADMIN_SECRET",
        ),
        ({"CRONTICK_ADMIN_SECRET": "short"}, "CRONTICK_ADMIN_SECRET: expected at least 32 characters"),
    ],
)
def test_admin_secrets_are_refused_at_startup(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings.from_env({"CRON_SECRET": TEST_SECRET, **env})


def test_admin_secrets_are_read_and_scrubbed_from_errors() -> None:
    s = Settings.from_env(
        {"CRON_SECRET": TEST_SECRET, "CRONTICK_ADMIN_SECRET": "b" * 40, "CRONTICK_ADMIN_VIEWER_SECRET": "c" * 40}
    )
    assert (s.admin_secret, s.admin_viewer_secret) == ("b" * 40, "c" * 40)
    assert {"b" * 40, "c" * 40} <= set(s.secrets)
    assert "b" * 40 not in repr(s)
