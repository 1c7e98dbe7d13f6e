"""Schedule evaluation costs the same statements for 1 or 50 schedules and 1 or 10,000 missed slots (counted on the wire)."""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import pq

import crontick
from crontick import db, schedules
from crontick.settings import Settings
from crontick.tick import TickResult, run_tick
from tests.conftest import TEST_SECRET

# Each statement is one Parse (extended protocol) or Query (simple protocol) message on the wire.
MESSAGE = re.compile(r"^F\t\d+\t(?:Parse|Query)\t(.*)$", re.MULTILINE)
SCHEDULE_QUERIES = {
    name: text.split("%(")[0].strip() for name, text in db.QUERIES.items() if name.startswith("schedule_")
}


def traced_tick(url: str, settings: Settings) -> tuple[TickResult, list[str]]:
    """One tick, and the schedule queries it sent, in order (read from libpq's trace of its connection)."""

    async def go() -> tuple[TickResult, list[str]]:
        conn = await db.connect(url)
        with tempfile.TemporaryFile() as trace:
            conn.pgconn.trace(trace.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
            try:
                result = await run_tick(conn, settings, source="test")
            finally:
                conn.pgconn.untrace()
                await conn.close()
            trace.seek(0)
            sent = [m.group(1) for m in MESSAGE.finditer(trace.read().decode("utf-8", "replace"))]
        # The trace quotes the text with escapes, so match on the first line of each query.
        return result, [n for text in sent for n, q in SCHEDULE_QUERIES.items() if q.splitlines()[0] in text]

    return asyncio.run(go())


@pytest.fixture
def many() -> Iterator[Any]:
    names: list[str] = []

    def declare(count: int) -> None:
        for n in range(count):
            name = f"rt-{n:03d}"
            schedules.unregister(name)
            crontick.schedule(name, "* * * * *", "t_rt.noop", {"n": n}, catch_up="all" if n % 2 else "latest")
            names.append(name)

    yield declare
    for name in names:
        schedules.unregister(name)


@crontick.handler("t_rt.noop")
def noop(payload: Any, job: crontick.Job) -> None:
    pass


@pytest.mark.parametrize(("count", "sleep_hours"), [(1, 0.05), (50, 0.05), (50, 7 * 24)])
def test_schedule_statements_do_not_grow_with_schedules_or_missed_slots(
    database_url: str, conn: psycopg.Connection[Any], many: Any, count: int, sleep_hours: float
) -> None:
    many(count)
    settings = Settings(database_url=database_url, cron_secret=TEST_SECRET, batch_size=1)
    first, names = traced_tick(database_url, settings)  # syncs: new schedules start now
    assert names == ["schedule_due", "schedule_apply"] and first.schedules.enqueued == 0  # apply: the next_at of each
    _idle, names = traced_tick(database_url, settings)
    assert names == [] and _idle.schedules.enqueued == 0  # nothing due: the tick's probe saw so, no schedule statement
    conn.execute(
        "update crontick_schedules set evaluated_until = evaluated_until - make_interval(secs => %(s)s), next_at = '-infinity'",
        {"s": sleep_hours * 3600},
    )
    busy, names = traced_tick(database_url, settings)
    assert names == ["schedule_due", "schedule_apply"]
    per_all = min(int(sleep_hours * 60), 100)
    assert busy.schedules.enqueued == (count // 2) * per_all + (count - count // 2)
    # Whatever the sleep, each schedule writes its enqueued slots plus at most one row per reason.
    (rows,) = conn.execute("select count(*) from crontick_schedule_slots").fetchone()  # type: ignore[misc]
    assert rows <= busy.schedules.enqueued + count
    assert busy.schedules.skipped >= count * (int(sleep_hours * 60) - 1) - busy.schedules.enqueued or sleep_hours > 24
