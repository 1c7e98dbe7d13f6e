"""Retention's cost: ticks over a million expired done jobs against ticks over a million kept ones, side by side.

`python -m bench.retention` (admin URL from CRONTICK_BENCH_DATABASE_URL or CRONTICK_TEST_DATABASE_URL).
The promise: a tick with a million expired rows takes no longer than one with none, plus one bounded batch.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
import uuid

import psycopg
from psycopg.conninfo import make_conninfo

from crontick import db
from crontick.settings import Settings
from crontick.tick import retention
from crontick.tick.pipeline import run_tick

ROWS = int(os.environ.get("CRONTICK_BENCH_RETENTION_ROWS", "") or 1_000_000)
TICKS = 25


def admin_url() -> str:
    url = os.environ.get("CRONTICK_BENCH_DATABASE_URL") or os.environ.get("CRONTICK_TEST_DATABASE_URL")
    if not url:
        sys.exit("set CRONTICK_BENCH_DATABASE_URL (or CRONTICK_TEST_DATABASE_URL) to a PostgreSQL admin URL")
    return url


def create(admin: str, days_old: int) -> tuple[str, str]:
    """A migrated database holding ROWS done jobs last changed `days_old` days ago (one INSERT)."""
    name = f"crontick_bench_ret_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
        conn.execute(f'alter database "{name}" set search_path = crontick, public')
    url = make_conninfo(admin, dbname=name)
    asyncio.run(db.migrate(url))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "insert into jobs (type, payload, status, attempts, updated_at, finished_at)"
            " select 'old', '{}', 'done', 1, t, t"
            " from (select now() - %(days)s * interval '1 day' - g * interval '10 milliseconds' as t"
            "       from generate_series(1, %(n)s) g) s",
            {"days": days_old, "n": ROWS},
        )
        conn.execute("vacuum analyze jobs")
    return name, url


async def timed_tick(url: str) -> float:
    conn = await db.connect(url)
    try:
        began = time.perf_counter()
        await run_tick(conn, Settings(database_url=url), source="bench")
        return (time.perf_counter() - began) * 1000
    finally:
        await conn.close()


def main() -> None:
    admin = admin_url()
    made = []
    try:
        kept_name, kept = create(admin, 1)
        made.append(kept_name)
        expired_name, expired = create(admin, 8)
        made.append(expired_name)
        times: dict[str, list[float]] = {"kept": [], "expired": []}
        for _ in range(TICKS):  # interleaved, so both sides see the same machine load
            for side, url in (("kept", kept), ("expired", expired)):
                retention.reset()  # one process plays both: each tick looks for expired rows afresh
                times[side].append(asyncio.run(timed_tick(url)))
        with psycopg.connect(expired) as conn:
            left = conn.execute("select count(*) from jobs").fetchone()[0]  # type: ignore[index]
        kept_ms, expired_ms = statistics.median(times["kept"]), statistics.median(times["expired"])
        print(
            json.dumps(
                {
                    "rows": ROWS,
                    "ticks": TICKS,
                    "batch": retention.BATCH_SIZE,
                    "median_tick_ms_nothing_expired": round(kept_ms, 1),
                    "median_tick_ms_all_expired": round(expired_ms, 1),
                    "slowest_tick_ms_all_expired": round(max(times["expired"]), 1),
                    "extra_ms_per_tick": round(expired_ms - kept_ms, 1),
                    "ratio": round(expired_ms / kept_ms, 2),
                    "deleted": ROWS - left,
                },
                indent=2,
            )
        )
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            for name in made:
                conn.execute(f'drop database if exists "{name}" with (force)')


if __name__ == "__main__":
    main()
