"""The overview's store: capped counts, hourly figures from ticks, tick gaps, and the indexes the counts read."""

from __future__ import annotations

from typing import Any

import psycopg

from crontick.admin import tx
from crontick.admin.overview import store
from crontick.db.queries import query
from crontick.jobs.queue import STATUSES as JOB_STATUSES
from tests.admin.api_support import insert_jobs
from tests.admin.store_support import GROUPED, MIXED, run
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
    [oldest], end = run(database_url, lambda c: store.list_ticks(c, before_id=tx.decode_cursor(cursor)))
    assert (oldest["gap_seconds"], oldest["gap_flagged"], end) == (None, False, None)


def test_the_counts_per_status_read_an_index_that_holds_each_status(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    # jobs_status_updated holds only ended jobs (migration 0024): the other statuses are counted from the
    # indexes that hold them, a group's pending jobs (held or not) once each.
    conn.execute(MIXED)
    conn.execute(GROUPED)
    conn.execute("insert into jobs (type, payload, status) values ('t_merge.1', '{}', 'cancelled')")
    got = run(database_url, store.stats)["jobs"]
    expected = dict(conn.execute("select status, count(*) from jobs group by status").fetchall())
    assert list(got) == list(JOB_STATUSES)  # every status, in the order the API has always given them
    assert got == {s: expected.get(s, 0) for s in JOB_STATUSES}
    assert got["pending"] == 30 + 5 and got["running"] == 2  # 30 ungrouped, 5 held behind their running head
    conn.execute("set enable_seqscan = off")  # a statement no index can serve still scans, at a cost the plan shows
    rows = conn.execute("explain " + query("admin_stats_counts"), {"cap": store.COUNT_CAP + 1}).fetchall()
    plan = "\n".join(r[0] for r in rows)
    assert "Seq Scan on jobs" not in plan, plan


def test_stats_show_the_wakeups_booked_and_failed(database_url: str, conn: psycopg.Connection[Any]) -> None:
    """The rows crontick_wakeup_claim and crontick_wakeup_failed leave (crontick.wakers.booking): one instant booked
    an hour ahead, one whose booking failed, and one booked two days ago (not in the last day)."""
    assert run(database_url, store.stats)["wakeups"] == {
        "next_booked_at": None, "last_failed_at": None, "last_error": None, "failed_last_day": 0, "booked_last_day": 0,
    }  # fmt: skip
    ahead, failed = conn.execute(
        "select date_trunc('second', now()) + interval '1 hour', date_trunc('second', now()) + interval '2 hours'"
    ).fetchone()
    conn.execute("select crontick.crontick_wakeup_claim(%s, 'qstash')", (ahead,))
    conn.execute("select crontick.crontick_wakeup_claim(%s, 'qstash', _error => 'QStash answered 500')", (failed,))
    conn.execute(
        "insert into crontick_wakeups (instant, provider, booked_at) values (now() - interval '2 days', 'qstash',"
        " now() - interval '2 days')"
    )
    wakeups = run(database_url, store.stats)["wakeups"]
    assert (wakeups["next_booked_at"], wakeups["booked_last_day"], wakeups["failed_last_day"]) == (ahead, 1, 1)
    assert wakeups["last_error"] == "QStash answered 500" and wakeups["last_failed_at"] is not None
