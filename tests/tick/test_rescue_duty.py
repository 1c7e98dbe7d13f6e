"""crontick.tick.rescue_duty: the jobs whose lease expired are rescued, and the retried join this tick's batch."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg

import crontick
from crontick.tick import rescue_duty
from crontick.tick.claim import RescueCounts
from tests.support.core_jobs import db_now, tick
from tests.tick.support import DutyRun, settings_for

DUTY = rescue_duty.DUTY
ran: list[int] = []


@crontick.handler("t_tick_rescue.noop")
async def noop(payload: Any, job: crontick.Job) -> None:
    ran.append(payload["n"])


def expire(conn: psycopg.Connection[Any], *, attempts: int = 1, max_attempts: int = 4) -> None:
    """A job a dead tick held: running, its lease passed."""
    crontick.enqueue(conn, "t_tick_rescue.noop", {"n": attempts}, max_attempts=max_attempts)
    conn.execute(
        "update jobs set status = 'running', attempts = %(a)s, started_at = now() - interval '10 minutes',"
        " locked_until = now() - interval '1 minute' where status = 'pending'",
        {"a": attempts},
    )


def test_due_it_retries_or_fails_each_expired_lease_in_one_statement(database_url: str, duty_run: DutyRun) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        expire(conn)
        expire(conn, attempts=4)  # its last attempt: failed
    counts, _, statements = duty_run(DUTY, {"rescue": {"due": True}})
    assert counts == RescueCounts(retried=1, failed=1) and DUTY.made_due(counts)
    assert statements == ["job_rescue_expired"]


def test_not_due_or_out_of_time_it_costs_no_statement(database_url: str, duty_run: DutyRun) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        expire(conn)
    assert duty_run(DUTY, {"rescue": {"due": False}})[::2] == (RescueCounts(0, 0), [])
    assert duty_run(DUTY, {"rescue": {"due": True}}, seconds_left=-1.0)[::2] == (RescueCounts(0, 0), [])
    assert not DUTY.made_due(RescueCounts(retried=0, failed=3))


def test_a_tick_runs_the_rescued_job_in_its_own_batch(database_url: str) -> None:
    ran.clear()
    with psycopg.connect(database_url, autocommit=True) as conn:
        expire(conn)
        now = db_now(conn)
    result = tick(database_url, settings_for(database_url), now=now + timedelta(seconds=1))
    assert (result.jobs.rescued, result.jobs.claimed, result.jobs.succeeded) == (1, 1, 1) and ran == [1]
