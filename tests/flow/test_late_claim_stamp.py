"""A claim made after the tick's first statement (the one after a rescue) is stamped when it happens: a rate
limit's start and a lease are not dated back to the tick's start when slow reminder sends came first."""

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

crontick.rate_limit(LIMIT, 100, per_seconds=3600)


@crontick.handler("t_stamp.limited", rate_limit=LIMIT)
async def limited(payload: Any, job: crontick.Job) -> None:
    """Counts against LIMIT."""


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
    db_now = conn.execute("select now()").fetchone()
    assert db_now is not None
    add_due(conn, 1, now=db_now[0])
    provider.behave = slow(SEND_SECONDS)
    settings = settings_for(database_url, provider, "webhook")

    async def go() -> Any:
        c = await db.connect(database_url)
        try:
            return await run_tick(c, settings, source="test")  # the database's clock, as in production
        finally:
            await c.close()

    result = asyncio.run(go())
    assert (result.reminders.sent, result.jobs.rescued, result.jobs.succeeded) == (1, 1, 1)
    tick_at = conn.execute("select started_at from crontick_ticks order by id desc limit 1").fetchone()
    limit = conn.execute("select starts_at from crontick_rate_limits where name = %s", (LIMIT,)).fetchone()
    job = conn.execute("select started_at from jobs where id = %s", (job_id,)).fetchone()
    assert tick_at is not None and limit is not None and job is not None
    late = tick_at[0] + timedelta(seconds=SEND_SECONDS)
    assert limit[0][-1] >= late, "the limit's start is dated back to the tick's start"
    assert job[0] >= late, "the job's attempt is dated back to the tick's start"
