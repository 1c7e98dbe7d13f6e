"""Retention of what used to grow without bound: cancelled jobs, the admin audit and inbound events, in batches."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

from crontick.tick import retention
from tests.support.core_jobs import db_now, settings_for, tick

DAY = timedelta(days=1)
BATCH = 10
OLD = 25  # expired rows per table: two full batches, then a part


@pytest.fixture
def runs() -> Iterator[list[dict[str, Any]]]:
    """The `retention` log lines of the test, parsed."""
    lines: list[dict[str, Any]] = []

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            event = json.loads(record.getMessage())
            if event["event"] == "retention":
                lines.append(event)

    handler, logger = Handler(), logging.getLogger("crontick")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    yield lines
    logger.removeHandler(handler)
    logger.setLevel(level)


def seed(conn: psycopg.Connection[Any], now: datetime) -> dict[str, tuple[list[Any], list[Any]]]:
    """(ids to delete, ids to keep) per table, around each table's keep period."""

    def cancelled(days_ago: float) -> Any:
        sql = "insert into jobs (type, payload, status, updated_at) values ('x', '{}', 'cancelled', %(t)s) returning id"
        return conn.execute(sql, {"t": now - days_ago * DAY}).fetchone()[0]  # type: ignore[index]

    def audit(days_ago: float) -> Any:
        sql = "insert into admin_audit (at, role, action) values (%(t)s, 'admin', 'cancel') returning id"
        return conn.execute(sql, {"t": now - days_ago * DAY}).fetchone()[0]  # type: ignore[index]

    def event(days_ago: float, n: int) -> Any:
        sql = (
            "insert into crontick_inbound_events (hook, event_id, job_id, received_at)"
            " values ('h', %(id)s, 0, %(t)s) returning event_id"
        )
        return conn.execute(sql, {"id": f"evt_{days_ago}_{n}", "t": now - days_ago * DAY}).fetchone()[0]  # type: ignore[index]

    rows = {
        "cancelled": ([cancelled(31 + n / 100) for n in range(OLD)], [cancelled(29), cancelled(1)]),
        "audit": ([audit(91 + n / 100) for n in range(OLD)], [audit(89), audit(1)]),
        "events": ([event(31 + n / 100, n) for n in range(OLD)], [event(29, 0), event(1, 0)]),
    }
    # One tick record past its 30 days: what makes the probe start retention on a live system.
    conn.execute(
        "insert into crontick_ticks (started_at, finished_at, source, summary) values (%(t)s, %(t)s, 'old', '{}')",
        {"t": now - 31 * DAY},
    )
    # A pending job (not yet due) is kept whatever its age, a done one for CRONTICK_KEEP_DONE_DAYS.
    for status, days_ago in (("pending", 400), ("done", 6)):
        conn.execute(
            "insert into jobs (type, payload, status, run_after, updated_at)"
            " values ('keep', '{}', %(s)s, %(later)s, %(t)s)",
            {"s": status, "t": now - days_ago * DAY, "later": now + DAY},
        )
    return rows


def present(conn: psycopg.Connection[Any]) -> dict[str, set[Any]]:
    return {
        "cancelled": {r[0] for r in conn.execute("select id from jobs where status = 'cancelled'")},
        "audit": {r[0] for r in conn.execute("select id from admin_audit")},
        "events": {r[0] for r in conn.execute("select event_id from crontick_inbound_events")},
    }


def test_cancelled_jobs_audit_rows_and_inbound_events_expire_in_bounded_batches(
    database_url: str, conn: psycopg.Connection[Any], runs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "BATCH_SIZE", BATCH)
    now = db_now(conn)
    rows = seed(conn, now)
    settings = settings_for(database_url)
    for n in range(5):  # the first tick's probe starts it; each full batch makes the next tick go on
        tick(database_url, settings, now=now + timedelta(seconds=n))
    per_table = {k: [r[k] for r in runs] for k in ("cancelled_jobs", "audit", "inbound_events")}
    assert per_table == {k: [BATCH, BATCH, OLD - 2 * BATCH] for k in per_table}, runs
    assert [r["ticks"] for r in runs] == [1, 0, 0]
    left = present(conn)
    for table, (expired, kept) in rows.items():
        assert left[table] == set(kept), f"{table}: expected only the rows inside the keep period to stay"
        assert not left[table] & set(expired)
    assert conn.execute("select status from jobs where type = 'keep' order by id").fetchall() == [
        ("pending",),
        ("done",),
    ]


def test_cancelled_jobs_follow_keep_failed_days_and_the_fixed_periods_are_what_the_docs_say(
    database_url: str, conn: psycopg.Connection[Any], runs: list[dict[str, Any]]
) -> None:
    now = db_now(conn)
    conn.execute(
        "insert into jobs (type, payload, status, updated_at) values ('x', '{}', 'cancelled', %(t)s)",
        {"t": now - 3 * DAY},
    )
    conn.execute(
        "insert into crontick_ticks (started_at, finished_at, source, summary) values (%(t)s, %(t)s, 'old', '{}')",
        {"t": now - 31 * DAY},
    )
    tick(database_url, settings_for(database_url, keep_failed_days=2), now=now)
    assert [r["cancelled_jobs"] for r in runs] == [1]
    assert retention.KEEP_AUDIT == 90 * DAY and retention.KEEP_INBOUND_EVENTS == 30 * DAY
    assert retention.fixed_cutoffs(now) == {
        "audit_before": now - 90 * DAY,
        "inbound_before": now - 30 * DAY,
        "signals_before": now - 7 * DAY,  # durable steps: docs/steps.md says signals are kept 7 days
    }
