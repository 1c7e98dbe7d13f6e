"""What a tick does after slow reminder sends is timed when it happens, not at the tick's start: a claim made
after its first statement (the one after a rescue) stamps its rate limit's start and its lease then, and a
snooze (as a Retry-After) counts from when its job ended."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import psycopg

import crontick
from crontick import db
from crontick.tick.pipeline import run_tick
from tests.support.reminders import Provider, add_due, settings_for, slow

LIMIT = "t_stamp.llm"
SEND_SECONDS = 1.5
SNOOZE_SECONDS = 30

crontick.rate_limit(LIMIT, 100, per_seconds=3600)


@crontick.handler("t_stamp.limited", rate_limit=LIMIT)
async def limited(payload: Any, job: crontick.Job) -> None:
    """Counts against LIMIT."""


@crontick.handler("t_stamp.snooze")
async def snooze(payload: Any, job: crontick.Job) -> None:
    raise crontick.Snooze(SNOOZE_SECONDS)


def _slow_tick(database_url: str, conn: psycopg.Connection[Any], provider: Provider) -> Any:
    """One tick by the database's clock (as in production), after a reminder send of SEND_SECONDS."""
    db_now = conn.execute("select now()").fetchone()
    assert db_now is not None
    add_due(conn, 1, now=db_now[0])
    provider.behave = slow(SEND_SECONDS)
    settings = settings_for(database_url, provider, "webhook")

    async def go() -> Any:
        c = await db.connect(database_url)
        try:
            return await run_tick(c, settings, source="test")
        finally:
            await c.close()

    return asyncio.run(go())


def _tick_started_at(conn: psycopg.Connection[Any]) -> Any:
    row = conn.execute("select started_at from crontick_ticks order by id desc limit 1").fetchone()
    assert row is not None
    return row[0]


def test_a_job_claimed_after_a_rescue_behind_slow_reminders_is_stamped_when_it_starts(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    row = conn.execute(
        "insert into jobs (type, payload, status, attempts, locked_until, started_at)"
        " values ('t_stamp.limited', '{}', 'running', 1, now() - interval '1 minute', now() - interval '2 minutes')"
        " returning id"
    ).fetchone()
    assert row is not None
    job_id = row[0]
    result = _slow_tick(database_url, conn, provider)
    assert (result.reminders.sent, result.jobs.rescued, result.jobs.succeeded) == (1, 1, 1)
    limit = conn.execute("select starts_at from crontick_rate_limits where name = %s", (LIMIT,)).fetchone()
    job = conn.execute("select started_at from jobs where id = %s", (job_id,)).fetchone()
    assert limit is not None and job is not None
    late = _tick_started_at(conn) + timedelta(seconds=SEND_SECONDS)
    assert limit[0][-1] >= late, "the limit's start is dated back to the tick's start"
    assert job[0] >= late, "the job's attempt is dated back to the tick's start"


def test_a_snooze_behind_slow_reminders_counts_from_when_its_job_ended(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    row = conn.execute("insert into jobs (type, payload) values ('t_stamp.snooze', '{}') returning id").fetchone()
    assert row is not None
    result = _slow_tick(database_url, conn, provider)
    assert (result.reminders.sent, result.jobs.snoozed) == (1, 1)
    job = conn.execute("select status, attempts, run_after from jobs where id = %s", (row[0],)).fetchone()
    assert job is not None and job[:2] == ("pending", 0)
    at_least = _tick_started_at(conn) + timedelta(seconds=SEND_SECONDS + SNOOZE_SECONDS)
    assert job[2] >= at_least, "the snooze counted from the tick's start, not from when its job ended"
