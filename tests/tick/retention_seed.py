"""Rows for the retention tests and bench: a big expired backlog in one INSERT, and every kind of row to keep."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg

DAY = timedelta(days=1)


def expired_done_jobs(conn: psycopg.Connection[Any], count: int, now: datetime) -> None:
    """`count` done jobs last changed 8 to 9 days before `now` (past the 7-day default), in one statement."""
    conn.execute(
        "insert into jobs (type, payload, status, attempts, run_after, updated_at, finished_at)"
        " select 'old.report', '{}', 'done', 1, t, t, t"
        " from (select %(now)s::timestamptz - interval '8 days' - g * interval '50 milliseconds' as t"
        "       from generate_series(1, %(n)s) g) s",
        {"now": now, "n": count},
    )
    conn.execute("analyze jobs")


def rows_to_keep_and_to_delete(conn: psycopg.Connection[Any], now: datetime) -> dict[str, dict[str, Any]]:
    """One of each kind of row retention must keep, and of each it must delete; returns their ids."""

    def one(sql: str, params: dict[str, Any]) -> int:
        row = conn.execute(sql + " returning id", params).fetchone()
        assert row is not None
        return int(row[0])

    def job(status: str, days_ago: float) -> int:
        return one(
            "insert into jobs (type, payload, status, attempts, locked_until, updated_at)"
            " values ('keep.check', '{}', %(s)s, 1, case when %(s)s = 'running' then %(now)s end, %(t)s)",
            {"s": status, "now": now, "t": now - days_ago * DAY},
        )

    def booking(starts_in_days: float) -> int:
        return one(
            "insert into bookings (customer_name, starts_at) values ('B', %(t)s)", {"t": now + starts_in_days * DAY}
        )

    def send(booking_id: int, status: str, days_ago: float, retry: bool = False) -> int:
        return one(
            "insert into reminder_sends (booking_id, kind, channel, status, sent_at, next_attempt_at, created_at, updated_at)"
            " values (%(b)s, '24h', 'email', %(s)s, case when %(s)s = 'sent' then %(t)s end,"
            "         case when %(r)s then %(now)s end, %(t)s, %(t)s)",
            {"b": booking_id, "s": status, "t": now - days_ago * DAY, "r": retry, "now": now},
        )

    def tick(days_ago: float) -> int:
        t = now - days_ago * DAY
        return one(
            "insert into crontick_ticks (started_at, finished_at, source, summary) values (%(t)s, %(t)s, 'old', '{}')",
            {"t": t},
        )

    def alert(status: str, days_ago: float) -> int:
        t = now - days_ago * DAY
        return one(
            "insert into crontick_alerts (event, subject, occurred_at, body, status, sent_at, updated_at)"
            " values ('job_failed', 'job:' || %(d)s, %(t)s, '{}', %(s)s, case when %(s)s = 'sent' then %(t)s end, %(t)s)",
            {"s": status, "t": t, "d": days_ago},
        )

    keep = {
        "jobs": [job("pending", 400), job("running", 400), job("done", 6), job("failed", 29)],
        # A booking moved into the future: its old row still stops a second reminder. A retry due.
        "reminder_sends": [send(booking(+2), "sent", 35), send(booking(-40), "failed", 35, retry=True)],
        "crontick_ticks": [tick(29)],
        "crontick_alerts": [alert("sent", 29), alert("pending", 1)],
    }
    delete = {
        "jobs": [job("failed", 31)],
        "reminder_sends": [send(booking(-40), "sent", 35), send(booking(-40), "unknown", 31)],
        "crontick_ticks": [tick(31)],
        "crontick_alerts": [alert("sent", 31), alert("failed", 40)],
    }
    return {"keep": keep, "delete": delete}


def present(conn: psycopg.Connection[Any], table: str, ids: list[int]) -> list[int]:
    from psycopg import sql

    rows = conn.execute(
        sql.SQL("select id from {} where id = any(%(ids)s) order by id").format(sql.Identifier(table)), {"ids": ids}
    ).fetchall()
    return [int(r[0]) for r in rows]
