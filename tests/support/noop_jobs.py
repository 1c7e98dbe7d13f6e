"""A no-op job type for the deploy tests, and seeding more due jobs than one batch holds."""

from __future__ import annotations

from typing import Any

import psycopg

import crontick

NOOP = "deploy.noop"
BATCH_SIZE = 5


@crontick.handler(NOOP)
def noop(payload: Any, job: crontick.Job) -> None:
    """Succeeds at once: these tests are about who calls the tick, not what the jobs do."""


def seed(conn: psycopg.Connection[Any], count: int) -> None:
    """`count` jobs due a second ago (the tick reads the clock, so they are due at once)."""
    conn.execute(
        "insert into jobs (type, payload, run_after) select %(type)s, '{}', now() - interval '1 second'"
        " from generate_series(1, %(count)s)",
        {"type": NOOP, "count": count},
    )


def counts(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """Jobs by status, and the ticks recorded."""
    rows = conn.execute("select status, count(*) from jobs group by status").fetchall()
    ticks = conn.execute("select count(*) from crontick_ticks").fetchone()
    return {**{str(s): int(n) for s, n in rows}, "ticks": int(ticks[0]) if ticks else 0}
