"""Orphans: a job whose lease expired while running is rescued, and a late outcome for it is fenced off."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import psycopg

import crontick
from crontick import db
from crontick.jobs.job import Outcome
from crontick.tick.claim import RescueCounts, claim_due, rescue_expired
from crontick.tick.record import record_outcomes
from tests.support.core_jobs import (
    db_now,
    job_row,
    ran_fixture,  # noqa: F401 (provides the `ran` fixture)
    tick,
    wait_for,
)
from tests.support.run_cli import cli_env, spawn
from tests.support.run_cli import crontick as run_crontick
from tests.support.sidefx_handlers import SIDE_EFFECTS_TABLE_SQL

T = TypeVar("T")


def _on(url: str, work: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]]) -> T:
    async def go() -> T:
        conn = await db.connect(url)
        try:
            return await work(conn)
        finally:
            await conn.close()

    return asyncio.run(go())


def _claim_one(url: str, now: datetime) -> crontick.Job:
    jobs = _on(url, lambda c: claim_due(c, now, 10, 30))
    assert len(jobs) == 1
    return jobs[0]


def _expire_leases(conn: psycopg.Connection[Any]) -> None:
    """What a tick killed mid-run leaves behind: running rows whose lease has passed."""
    conn.execute("update jobs set locked_until = now() - interval '1 minute' where status = 'running'")


def _rescue(url: str, conn: psycopg.Connection[Any]) -> RescueCounts:
    now = db_now(conn)
    return _on(url, lambda c: rescue_expired(c, now))


def _record(url: str, conn: psycopg.Connection[Any], outcomes: Sequence[Outcome]) -> set[int]:
    now = db_now(conn)
    return _on(url, lambda c: record_outcomes(c, outcomes, now))


def _orphan(url: str, conn: psycopg.Connection[Any], **enqueue: Any) -> tuple[int, crontick.Job]:
    """A job claimed by a tick that then died: running, with its lease already expired."""
    job_id = crontick.enqueue(conn, "t_core.ok", {}, **enqueue)
    claimed = _claim_one(url, db_now(conn))
    _expire_leases(conn)
    return job_id, claimed


def test_expired_lease_goes_back_to_pending_keeping_its_attempts(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id, _ = _orphan(database_url, conn)
    counts = _rescue(database_url, conn)
    assert (counts.retried, counts.failed) == (1, 0)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["locked_until"]) == ("pending", 1, None)
    assert row["last_error"].startswith("LeaseExpired: attempt 1 of 4 was still running when its lease ended")
    assert row["run_after"] <= db_now(conn)  # due again at once


def test_expired_lease_on_the_last_attempt_fails(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id, _ = _orphan(database_url, conn, max_attempts=1)
    counts = _rescue(database_url, conn)
    assert (counts.retried, counts.failed) == (0, 1)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["locked_until"]) == ("failed", 1, None)
    assert row["last_error"].startswith("LeaseExpired: attempt 1 of 1 was still running when its lease ended")
    assert row["finished_at"] is not None


def test_a_live_lease_is_not_rescued(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_core.ok", {})
    _claim_one(database_url, db_now(conn))
    assert _rescue(database_url, conn).total == 0
    assert job_row(conn, job_id)["status"] == "running"


def test_the_tick_rescues_first_then_runs_the_rescued_job(
    database_url: str, conn: psycopg.Connection[Any], ran: list[int]
) -> None:
    retried = crontick.enqueue(conn, "t_core.ok", {})
    exhausted = crontick.enqueue(conn, "t_core.ok", {}, max_attempts=1)
    now = db_now(conn)
    _on(database_url, lambda c: claim_due(c, now, 10, 30))
    _expire_leases(conn)
    result = tick(database_url, now=db_now(conn))
    assert result.jobs.rescued == 2
    assert (result.jobs.claimed, result.jobs.succeeded) == (1, 1)
    assert retried in ran and exhausted not in ran
    assert (job_row(conn, retried)["status"], job_row(conn, retried)["attempts"]) == ("done", 2)
    assert job_row(conn, exhausted)["status"] == "failed"


def test_late_outcome_after_rescue_and_reclaim_changes_nothing(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id, first = _orphan(database_url, conn)
    _rescue(database_url, conn)
    second = _claim_one(database_url, db_now(conn))
    assert (first.attempt, second.attempt) == (1, 2)
    assert _record(database_url, conn, [Outcome(job_id, first.attempt, "done", first.attempt)]) == set()
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["finished_at"]) == ("running", 2, None)
    # The current attempt's own outcome is written.
    assert _record(database_url, conn, [Outcome(job_id, second.attempt, "done", second.attempt)]) == {job_id}
    assert job_row(conn, job_id)["status"] == "done"


def test_late_outcome_after_rescue_to_pending_changes_nothing(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id, first = _orphan(database_url, conn)
    _rescue(database_url, conn)
    late = Outcome(job_id, first.attempt, "failed", first.attempt, None, "ValueError: late")
    assert _record(database_url, conn, [late]) == set()
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert row["last_error"].startswith("LeaseExpired")


def test_tick_killed_mid_job_is_rescued_and_the_job_runs_again(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(SIDE_EFFECTS_TABLE_SQL)
    job_id = crontick.enqueue(conn, "t_sidefx.hang_once", {})
    env = cli_env(database_url, CRONTICK_HANDLERS="tests.support.sidefx_handlers")
    victim = spawn("tick", env=env)
    wait_for(conn, "select count(*) from side_effects", 1, "the first attempt to start")
    victim.kill()  # SIGKILL: no cleanup, no outcome recorded, like a serverless function at its limit
    victim.communicate(timeout=10)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("running", 1)
    _expire_leases(conn)  # instead of waiting out the lease
    result = run_crontick("tick", env=env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["jobs"]["rescued"], summary["jobs"]["succeeded"]) == (1, 1)
    assert (job_row(conn, job_id)["status"], job_row(conn, job_id)["attempts"]) == ("done", 2)
    # At-least-once: the killed attempt had already done its side effect, so the job ran twice.
    assert conn.execute("select count(*) from side_effects where job_id = %(id)s", {"id": job_id}).fetchone() == (2,)
