"""Finished (or pending) jobs inserted straight into the table, for the tests of the admin, the CLI and kicks that act
on them."""

from __future__ import annotations

from typing import Any


def insert_jobs(
    conn: Any, count: int, *, status: str = "failed", type: str = "t_api.x", key: str | None = None
) -> list[int]:
    """`count` finished (or pending) jobs in one statement; returns their ids in order."""
    rows = conn.execute(
        "insert into jobs (type, payload, status, attempts, max_attempts, last_error, key, finished_at)"
        " select %(type)s, jsonb_build_object('n', g), %(status)s, 1, 1, 'ValueError: n=' || g, %(key)s,"
        " case when %(status)s in ('done', 'failed', 'cancelled') then now() end"
        " from generate_series(1, %(count)s) g order by g returning id",
        {"type": type, "status": status, "count": count, "key": key},
    ).fetchall()
    return [r[0] for r in rows]
