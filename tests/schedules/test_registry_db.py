"""Schedules against real PostgreSQL: first sight, catch-up, replays, older clocks, expression changes.

Time is faked by moving a schedule's cursor back (the database's clock is the only one that counts).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

import crontick
from crontick import db
from crontick.schedules import registry
from crontick.settings import Settings
from crontick.tick.pipeline import run_tick
from tests.support.constants import TEST_SECRET


@pytest.fixture
def declare() -> Iterator[Any]:
    """declare(name, cron, ...) registers a schedule for this test only."""
    names: list[str] = []

    def add(name: str, cron: str, job_type: str = "t_sched.job", payload: Any = None, **kw: Any) -> None:
        registry.unregister(name)
        crontick.schedule(name, cron, job_type, payload, **kw)
        names.append(name)

    yield add
    for name in names:
        registry.unregister(name)


def tick(url: str, grace_seconds: float = 900.0) -> registry.ScheduleCounts:
    async def go() -> registry.ScheduleCounts:
        conn = await db.connect(url)
        try:
            return await registry.run_due(conn, grace_seconds=grace_seconds)
        finally:
            await conn.close()

    return asyncio.run(go())


def plans_now(url: str) -> list[Any]:
    """What a tick would send to schedule_apply right now (to replay it, or send it with another clock)."""
    with psycopg.connect(url, autocommit=True) as conn:
        now, _digest, _dormant, due, _next_at = conn.execute(
            db.query("schedule_due"), {"declared": None, "digest": ""}
        ).fetchone()  # type: ignore[misc]
    return [p for p in (registry._plan(entry, now, 900.0) for entry in due) if p is not None]


def apply(conn: psycopg.Connection[Any], plans: list[Any]) -> tuple[int, int, int]:
    row = conn.execute(db.query("schedule_apply"), {"plans": Jsonb(plans)}).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def sleep(conn: psycopg.Connection[Any], name: str, hours: float) -> None:
    """As if no tick had run for `hours`: the cursor moves back, and the next tick must look."""
    conn.execute(
        "update crontick_schedules set evaluated_until = evaluated_until - make_interval(secs => %(s)s),"
        " next_at = '-infinity' where name = %(n)s",
        {"s": hours * 3600, "n": name},
    )


def scheduled_jobs(conn: psycopg.Connection[Any], name: str) -> list[tuple[Any, ...]]:
    return conn.execute(
        "select scheduled_for, type, payload from jobs where schedule = %(n)s order by id", {"n": name}
    ).fetchall()


def test_a_new_schedule_starts_now_and_an_idle_tick_enqueues_nothing(
    database_url: str, conn: psycopg.Connection[Any], declare: Any
) -> None:
    declare("every-minute", "* * * * *")
    before = conn.execute("select now()").fetchone()[0]  # type: ignore[index]
    assert tick(database_url) == (0, 0)  # first sight: no backfill
    row = conn.execute("select evaluated_until, next_at from crontick_schedules").fetchone()
    assert row is not None
    cursor, next_at = row
    assert before <= cursor < next_at <= cursor + timedelta(minutes=1)
    assert next_at == cursor.replace(second=0, microsecond=0) + timedelta(minutes=1)
    # As if the first tick had come a minute later: the next one is then idle whenever the minute turns.
    conn.execute(
        "update crontick_schedules set evaluated_until = evaluated_until + interval '1 minute',"
        " next_at = next_at + interval '1 minute'"
    )
    assert tick(database_url) == (0, 0)
    assert conn.execute("select count(*) from jobs").fetchone() == (0,)


def test_six_hour_sleep_latest_enqueues_the_newest_and_records_the_rest(
    database_url: str, conn: psycopg.Connection[Any], declare: Any
) -> None:
    declare("hourly", "0 * * * *", payload={"kind": "hourly"})
    tick(database_url)
    sleep(conn, "hourly", 6)
    assert tick(database_url) == (1, 5)
    jobs = scheduled_jobs(conn, "hourly")
    now = conn.execute("select now()").fetchone()[0]  # type: ignore[index]
    newest = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    assert jobs == [(newest, "t_sched.job", {"kind": "hourly"})]
    rows = conn.execute(
        "select outcome, slot, last_slot, slot_count, job_id is not null from crontick_schedule_slots order by slot"
    ).fetchall()
    assert rows == [
        ("coalesced", newest - timedelta(hours=5), newest - timedelta(hours=1), 5, False),
        ("enqueued", newest, newest, 1, True),
    ]
    assert tick(database_url) == (0, 0)


def test_six_hour_sleep_all_enqueues_each_newest_first(
    database_url: str, conn: psycopg.Connection[Any], declare: Any
) -> None:
    declare("hourly-all", "0 * * * *", catch_up="all")
    tick(database_url)
    sleep(conn, "hourly-all", 6)
    assert tick(database_url) == (6, 0)
    slots_ = [r[0] for r in scheduled_jobs(conn, "hourly-all")]
    assert slots_ == sorted(slots_, reverse=True) and len(set(slots_)) == 6  # ids follow newest first
    # the claim runs them in that order too (run_after ties, then id)
    claimed = conn.execute("select scheduled_for from jobs order by run_after, id").fetchall()
    assert [r[0] for r in claimed] == slots_


def test_six_hour_sleep_skip_runs_the_newest_only_within_the_grace(
    database_url: str, conn: psycopg.Connection[Any], declare: Any
) -> None:
    declare("minutely-skip", "* * * * *", catch_up="skip")
    tick(database_url)
    sleep(conn, "minutely-skip", 6)
    assert tick(database_url) == (1, 359)  # the newest slot is under a minute old: within 15 minutes
    declare("minutely-skip-late", "* * * * *", catch_up="skip")
    tick(database_url)
    sleep(conn, "minutely-skip-late", 6)
    assert tick(database_url, grace_seconds=0.000001) == (0, 360)  # with no grace the newest is too late as well
    rows = conn.execute(
        "select outcome, slot_count from crontick_schedule_slots where schedule = 'minutely-skip-late' order by slot desc"
    ).fetchall()
    assert rows == [("skipped_late", 1), ("coalesced", 359)]


def test_a_replayed_apply_and_an_older_clock_enqueue_nothing(
    database_url: str, conn: psycopg.Connection[Any], declare: Any
) -> None:
    declare("every-minute", "* * * * *")
    tick(database_url)
    sleep(conn, "every-minute", 0.5)
    plans = plans_now(database_url)
    assert apply(conn, plans) == (1, 29, 1)
    cursor = conn.execute("select evaluated_until from crontick_schedules").fetchone()
    # The same statement again (a replayed tick): nothing new, and the cursor stays.
    enqueued, _, _ = apply(conn, plans)
    assert enqueued == 0
    # A tick whose clock is 5 minutes behind: its plan would move the cursor back, so it is refused.
    sleep(conn, "every-minute", 0)  # next_at -> -infinity, so the plan below is computed at all
    behind = [
        [*p[:4], (datetime.fromisoformat(p[4]) - timedelta(minutes=5)).isoformat(), *p[5:]]
        for p in plans_now(database_url)
    ]
    assert apply(conn, behind) == (0, 0, 0)
    assert conn.execute("select evaluated_until from crontick_schedules").fetchone() == cursor
    # ... and so is one 5 minutes ahead, which would run the next slots early.
    ahead = [
        [
            *p[:4],
            (datetime.fromisoformat(p[4]) + timedelta(minutes=5)).isoformat(),
            p[5],
            p[6],
            p[7],
            [(datetime.fromisoformat(p[4]) + timedelta(minutes=4)).isoformat()],
            [],
        ]
        for p in plans_now(database_url)
    ]
    assert apply(conn, ahead) == (0, 0, 0)
    assert len(scheduled_jobs(conn, "every-minute")) == 1


def test_a_tick_with_an_older_clock_uses_the_database_clock(
    database_url: str, conn: psycopg.Connection[Any], declare: Any
) -> None:
    declare("every-minute", "* * * * *")
    settings = Settings(database_url=database_url, cron_secret=TEST_SECRET)

    async def one(now: datetime) -> dict[str, Any]:
        c = await db.connect(database_url)
        try:
            return (await run_tick(c, settings, now=now)).to_json()
        finally:
            await c.close()

    asyncio.run(one(datetime.now(UTC)))
    sleep(conn, "every-minute", 0.1)  # 6 minutes without a tick
    first = asyncio.run(one(datetime.now(UTC)))
    assert first["schedules"] == {"enqueued": 1, "skipped": 5}
    for skew in (timedelta(minutes=-5), timedelta(hours=-1), timedelta(0)):
        again = asyncio.run(one(datetime.now(UTC) + skew))
        assert again["schedules"]["enqueued"] == 0
    assert len(scheduled_jobs(conn, "every-minute")) == 1
    logged = conn.execute("select summary -> 'schedules' from crontick_ticks order by id").fetchall()
    assert [r[0]["enqueued"] for r in logged] == [0, 1, 0, 0, 0]


def test_an_expression_change_keeps_the_cursor_backfills_nothing_and_never_reruns_a_slot(
    database_url: str, conn: psycopg.Connection[Any], declare: Any
) -> None:
    declare("report", "0 * * * *")
    tick(database_url)
    sleep(conn, "report", 3)
    assert tick(database_url).enqueued == 1
    (enqueued_slot,) = conn.execute("select scheduled_for from jobs").fetchone()  # type: ignore[misc]
    cursor_before = conn.execute("select evaluated_until from crontick_schedules").fetchone()[0]  # type: ignore[index]
    sleep(conn, "report", 3)  # three more hours pass, then a deploy changes the expression
    declare("report", "*/30 * * * *")
    assert tick(database_url) == (0, 0)  # nothing from before the change is backfilled
    row = conn.execute(
        "select cron, previous_cron, changed_at is not null, evaluated_until >= %(c)s, next_at > now()"
        " from crontick_schedules",
        {"c": cursor_before},
    ).fetchone()
    assert row == ("*/30 * * * *", "0 * * * *", True, True, True)
    # Even with the cursor forced back over the enqueued instant (which */30 also matches),
    # that instant is not enqueued again: its slot row holds it.
    conn.execute(
        "update crontick_schedules set evaluated_until = %(at)s - interval '1 second', next_at = '-infinity'",
        {"at": enqueued_slot},
    )
    counts = tick(database_url)
    assert [r[0] for r in scheduled_jobs(conn, "report")].count(enqueued_slot) == 1
    assert counts.enqueued <= 1


def test_a_schedule_no_longer_declared_goes_dormant_and_keeps_its_slots(
    database_url: str, conn: psycopg.Connection[Any], declare: Any
) -> None:
    declare("gone", "* * * * *")
    declare("stays", "0 * * * *")
    tick(database_url)
    sleep(conn, "gone", 0.1)
    tick(database_url)
    registry.unregister("gone")
    tick(database_url)
    rows = conn.execute("select name, next_at = 'infinity' from crontick_schedules order by name").fetchall()
    assert rows == [("gone", True), ("stays", False)]
    assert conn.execute("select count(*) from crontick_schedule_slots where schedule = 'gone'").fetchone() == (2,)


def test_a_process_resyncs_when_another_version_synced_other_declarations(
    database_url: str, conn: psycopg.Connection[Any], declare: Any
) -> None:
    declare("report", "0 * * * *")

    async def needs() -> bool:
        c = await db.connect(database_url)
        try:
            return registry.needs_sync(c)
        finally:
            await c.close()

    assert asyncio.run(needs())
    tick(database_url)
    assert not asyncio.run(needs())
    # Another version of the app (a deploy in progress) synced its own definition of "report".
    conn.execute("update crontick_schedule_declared set digest = 'other-version'")
    conn.execute("update crontick_schedules set cron = '15 * * * *', next_at = '-infinity'")
    assert tick(database_url) == (0, 0)  # not ours: left alone, and noticed
    assert asyncio.run(needs())
    tick(database_url)  # syncs ours again
    row = conn.execute(
        "select cron, previous_cron, d.digest = %(d)s from crontick_schedules, crontick_schedule_declared d",
        {"d": registry.digest(registry.declared())},
    ).fetchone()
    assert row == ("0 * * * *", "15 * * * *", True)
