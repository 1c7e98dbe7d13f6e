"""`python -m bench.schedules [DATABASE_URL]`: what schedule evaluation costs, measured side by side.

1. Slot math after a 30-day sleep of a `* * * * *` schedule: the bounded walk crontick uses
   (slots.plan) against walking all 43,200 slots.
2. With a database: the schedule step of a tick (schedules.run_due) for 1 and for 50 schedules,
   idle (nothing due) and after a 7-day sleep, against a database migrated for this run.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

import crontick
from crontick import db
from crontick.schedules import registry, slots

RUNS = 7


def median_ms(fn: Callable[[], Any], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def slot_math() -> None:
    cursor = datetime(2026, 10, 1, tzinfo=UTC)
    now = cursor + timedelta(days=30, seconds=30)
    bounded = median_ms(lambda: slots.plan("* * * * *", "Europe/Amsterdam", "latest", cursor, now))
    walk_all = median_ms(lambda: slots.slots_between("* * * * *", "Europe/Amsterdam", cursor, now))
    print(
        f"30-day sleep, * * * * *: plan {bounded:.1f} ms, walking every slot {walk_all:.1f} ms "
        f"(ratio {walk_all / bounded:.0f}x)"
    )


def declare(count: int) -> None:
    for name in [s.name for s in registry.declared()]:
        registry.unregister(name)
    for n in range(count):
        crontick.schedule(
            f"bench-{n:03d}", "* * * * *", "bench.schedule_noop", {"n": n}, catch_up="all" if n % 2 else "latest"
        )


async def step_ms(url: str, count: int, sleep_days: float) -> tuple[float, float]:
    """(median ms of an idle schedule step, ms of the step after a sleep) for `count` schedules."""
    declare(count)
    conn = await db.connect(url)
    try:
        await registry.run_due(conn)  # first sight: syncs
        idle = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            await registry.run_due(conn)
            idle.append((time.perf_counter() - t0) * 1000)
        await conn.execute(
            "update crontick_schedules set evaluated_until = evaluated_until - make_interval(days => %(d)s),"
            " next_at = '-infinity'",
            {"d": sleep_days},
        )
        t0 = time.perf_counter()
        counts = await registry.run_due(conn)
        busy = (time.perf_counter() - t0) * 1000
        assert counts.enqueued > 0
        return statistics.median(idle), busy
    finally:
        await conn.close()


def with_database(admin_url: str) -> None:
    name = f"crontick_bench_sched_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("create database {}").format(psycopg.sql.Identifier(name)))
        conn.execute(
            psycopg.sql.SQL("alter database {} set search_path = crontick, public").format(psycopg.sql.Identifier(name))
        )
    try:
        for count in (1, 50):
            url = make_conninfo(admin_url, dbname=name)
            asyncio.run(db.migrate(url))
            idle, busy = asyncio.run(step_ms(url, count, 7))
            print(
                f"{count:>2} schedules: idle step {idle:.2f} ms (1 statement); after a 7-day sleep {busy:.1f} ms (2 statements)"
            )
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("truncate crontick_schedules, crontick_schedule_slots, crontick_schedule_declared, jobs")
    finally:
        declare(0)
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(
                psycopg.sql.SQL("drop database if exists {} with (force)").format(psycopg.sql.Identifier(name))
            )


if __name__ == "__main__":
    slot_math()
    if len(sys.argv) > 1:
        with_database(sys.argv[1])
