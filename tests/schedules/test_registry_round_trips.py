"""Schedule evaluation costs the same statements for 1 or 50 schedules and 1 or 10,000 missed slots (counted on the wire)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import psycopg
import pytest

import crontick
from crontick.schedules import registry
from crontick.settings import Settings
from crontick.tick.pipeline import TickResult, run_tick
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import db_now
from tests.support.wire import traced


def traced_tick(url: str, settings: Settings, now: datetime) -> tuple[TickResult, list[str]]:
    """One tick at `now`, and the schedule queries it sent, in order (read from libpq's trace of its connection)."""
    result, names = traced(url, lambda conn: run_tick(conn, settings, now=now, source="test"))
    return result, [name for name in names if name.startswith("schedule_")]


@pytest.fixture
def many() -> Iterator[Any]:
    names: list[str] = []

    def declare(count: int) -> None:
        for n in range(count):
            name = f"rt-{n:03d}"
            registry.unregister(name)
            crontick.schedule(name, "* * * * *", "t_rt.noop", {"n": n}, catch_up="all" if n % 2 else "latest")
            names.append(name)

    yield declare
    for name in names:
        registry.unregister(name)


@crontick.handler("t_rt.noop")
def noop(payload: Any, job: crontick.Job) -> None:
    pass


@pytest.mark.parametrize(("count", "sleep_hours"), [(1, 0.05), (50, 0.05), (50, 7 * 24)])
def test_schedule_statements_do_not_grow_with_schedules_or_missed_slots(
    database_url: str, conn: psycopg.Connection[Any], many: Any, count: int, sleep_hours: float
) -> None:
    many(count)
    settings = Settings(database_url=database_url, cron_secret=TEST_SECRET, batch_size=1)
    # One instant for every tick: two ticks a moment apart on the real clock may straddle a minute,
    # and then the every-minute schedules are due in the second (CI saw it).
    now = db_now(conn)
    first, names = traced_tick(database_url, settings, now)  # syncs: new schedules start now
    assert names == ["schedule_due", "schedule_apply"] and first.schedules.enqueued == 0  # apply: the next_at of each
    _idle, names = traced_tick(database_url, settings, now)
    assert names == [] and _idle.schedules.enqueued == 0  # nothing due: the tick's probe saw so, no schedule statement
    conn.execute(
        "update crontick_schedules set evaluated_until = evaluated_until - make_interval(secs => %(s)s), next_at = '-infinity'",
        {"s": sleep_hours * 3600},
    )
    busy, names = traced_tick(database_url, settings, now)
    assert names == ["schedule_due", "schedule_apply"]
    per_all = min(int(sleep_hours * 60), 100)
    assert busy.schedules.enqueued == (count // 2) * per_all + (count - count // 2)
    # Whatever the sleep, each schedule writes its enqueued slots plus at most one row per reason.
    (rows,) = conn.execute("select count(*) from crontick_schedule_slots").fetchone()  # type: ignore[misc]
    assert rows <= busy.schedules.enqueued + count
    assert busy.schedules.skipped >= count * (int(sleep_hours * 60) - 1) - busy.schedules.enqueued or sleep_hours > 24
