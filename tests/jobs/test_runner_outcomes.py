"""What a tick does with each job: success, retry with backoff, failure, secrets scrubbed, the time budget."""

from __future__ import annotations

import logging
import os
import uuid
from datetime import timedelta
from typing import Any

import psycopg

import crontick
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import (
    db_now,
    job_row,
    ran_fixture,  # noqa: F401 (provides the `ran` fixture)
    settings_for,
    tick,
)


def test_plain_sql_insert_makes_a_job_the_next_tick_runs(
    database_url: str, conn: psycopg.Connection[Any], ran: list[int]
) -> None:
    job_id = conn.execute("insert into jobs (type, payload) values ('t_core.ok', '{}') returning id").fetchone()[0]  # type: ignore[index]
    result = tick(database_url, now=db_now(conn))
    assert job_id in ran
    assert (result.jobs.claimed, result.jobs.succeeded) == (1, 1)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["last_error"], row["locked_until"]) == ("done", 1, None, None)
    assert row["finished_at"] is not None


def test_sync_handler_runs_too(database_url: str, conn: psycopg.Connection[Any], ran: list[int]) -> None:
    job_id = crontick.enqueue(conn, "t_core.ok_sync", {"n": 1})
    assert tick(database_url, now=db_now(conn)).jobs.succeeded == 1
    assert job_id in ran and job_row(conn, job_id)["status"] == "done"


def test_job_not_yet_due_is_left_alone(database_url: str, conn: psycopg.Connection[Any]) -> None:
    now = db_now(conn)
    job_id = crontick.enqueue(conn, "t_core.ok", {}, run_after=now + timedelta(minutes=5))
    assert tick(database_url, now=now).jobs.claimed == 0
    assert job_row(conn, job_id)["status"] == "pending"
    assert tick(database_url, now=now + timedelta(minutes=6)).jobs.succeeded == 1


def test_unknown_type_fails_at_once_naming_the_type_and_modules_with_no_grace(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_core.no_such_type", {})
    result = tick(database_url, settings_for(database_url, unknown_type_grace_seconds=0), now=db_now(conn))
    assert result.jobs.failed == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("failed", 1)
    assert row["last_error"].startswith(f"UnknownJobType: job {job_id} has type 't_core.no_such_type'")
    assert "handler modules loaded:" in row["last_error"]


def test_permanent_error_fails_at_once(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_core.permanent", {})
    assert tick(database_url, now=db_now(conn)).jobs.failed == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("failed", 1)
    assert row["last_error"] == "PermanentError: expected a user that exists, got: user 7 was deleted"


def test_sys_exit_in_a_handler_is_a_retried_failure_not_a_dead_tick(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_core.exits", {})
    ok_id = crontick.enqueue(conn, "t_core.ok", {})
    result = tick(database_url, now=db_now(conn))
    assert (result.jobs.claimed, result.jobs.retried, result.jobs.succeeded) == (2, 1, 1)
    row = job_row(conn, job_id)
    assert (row["status"], row["locked_until"]) == ("pending", None)
    assert row["last_error"] == "SystemExit: a library called sys.exit() inside the handler"
    assert job_row(conn, ok_id)["status"] == "done"


def test_handler_exception_is_retried_about_a_minute_later(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_core.fail", {})
    now = db_now(conn)
    result = tick(database_url, now=now)
    assert (result.jobs.retried, result.jobs.failed) == (1, 0)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["locked_until"]) == ("pending", 1, None)
    assert row["last_error"] == "ValueError: boom on attempt 1"
    # 1 minute ± 20 % jitter, counted from when the attempt ended (a little after `now`).
    assert now + timedelta(seconds=48) <= row["run_after"] <= now + timedelta(seconds=73)


def test_four_failures_follow_the_schedule_then_fail(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_core.fail", {})
    now = db_now(conn)
    for attempt, minutes in [(1, 1), (2, 5), (3, 30)]:
        assert tick(database_url, now=now).jobs.retried == 1
        row = job_row(conn, job_id)
        assert (row["status"], row["attempts"]) == ("pending", attempt)
        delay = row["run_after"] - now
        assert timedelta(minutes=minutes * 0.8) <= delay <= timedelta(minutes=minutes * 1.2, seconds=1)
        # Not due before its retry time, due after it.
        assert tick(database_url, now=row["run_after"] - timedelta(seconds=1)).jobs.claimed == 0
        now = row["run_after"] + timedelta(seconds=1)
    assert tick(database_url, now=now).jobs.failed == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["last_error"]) == ("failed", 4, "ValueError: boom on attempt 4")


def test_job_max_attempts_overrides_the_default(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_core.fail", {}, max_attempts=1)
    assert tick(database_url, now=db_now(conn)).jobs.failed == 1
    assert job_row(conn, job_id)["status"] == "failed"


def test_per_type_policy_sets_the_retry_delay(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_core.exponential", {})
    now = db_now(conn)
    tick(database_url, now=now)
    row = job_row(conn, job_id)
    # Exponential(5 s, cap 300 s) after attempt 1: 2^1 × 5 s = 10 s, no jitter.
    assert row["status"] == "pending"
    assert now + timedelta(seconds=10) <= row["run_after"] <= now + timedelta(seconds=11)
    assert row["last_error"] == "ConnectionError: provider down"


def test_last_error_never_holds_the_secret(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_core.leaks_secret", {})
    tick(database_url, now=db_now(conn))
    error = job_row(conn, job_id)["last_error"]
    assert TEST_SECRET not in error
    assert error == "RuntimeError: upstream rejected Authorization: Bearer [redacted]"


def test_time_budget_releases_unstarted_jobs_and_stops_running_ones(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ids = crontick.enqueue_many(conn, [("t_core.slow", {"n": n}) for n in range(6)])
    settings = settings_for(database_url, time_budget_seconds=0.3, concurrency=2)
    result = tick(database_url, settings, now=db_now(conn))
    assert result.more is True
    assert (result.jobs.claimed, result.jobs.retried, result.jobs.released, result.jobs.succeeded) == (6, 2, 4, 0)
    rows = [job_row(conn, i) for i in ids]
    assert all(r["status"] == "pending" and r["locked_until"] is None for r in rows)
    stopped = [r for r in rows if r["attempts"] == 1]
    released = [r for r in rows if r["attempts"] == 0]
    assert len(stopped) == 2 and len(released) == 4
    assert all(r["last_error"].startswith("TimeoutError: job ") for r in stopped)
    assert all(r["last_error"] is None for r in released)


def test_fenced_outcome_of_a_taken_over_job_changes_nothing(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_core.taken_over", {"url": database_url})
    result = tick(database_url, now=db_now(conn))
    assert (result.jobs.claimed, result.jobs.fenced, result.jobs.succeeded) == (1, 1, 0)
    row = job_row(conn, job_id)
    # The second tick's claim (attempt 2) stands: the first tick's "done" was not written.
    assert (row["status"], row["attempts"]) == ("running", 2)
    assert row["finished_at"] is None


def test_released_job_keeps_the_error_of_its_previous_attempt(database_url: str, conn: psycopg.Connection[Any]) -> None:
    ids = crontick.enqueue_many(conn, [("t_core.slow", {}) for _ in range(2)])
    conn.execute("update jobs set attempts = 1, last_error = 'ValueError: boom on attempt 1'")
    settings = settings_for(database_url, time_budget_seconds=0.2, concurrency=1)
    assert tick(database_url, settings, now=db_now(conn)).jobs.released == 1
    rows = sorted(((r["attempts"], r["last_error"]) for r in (job_row(conn, i) for i in ids)), key=lambda r: r[0])
    # The stopped job records its timeout; the released one is as it was before the tick.
    assert rows[0] == (1, "ValueError: boom on attempt 1")
    assert rows[1][0] == 2 and rows[1][1].startswith("TimeoutError: ")


def test_slow_job_is_logged_not_failed(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_core.ok", {})
    handler = _Recorder()
    logger = logging.getLogger("crontick")
    logger.addHandler(handler)
    seconds = iter(range(0, 1_000_000, 9))  # a clock that moves 9 s between any two readings
    try:
        settings = settings_for(database_url, time_budget_seconds=1000.0, lease_seconds=1100.0)
        result = tick(database_url, settings, now=db_now(conn), clock=lambda: float(next(seconds)))
    finally:
        logger.removeHandler(handler)
    assert result.jobs.succeeded == 1
    assert job_row(conn, job_id)["status"] == "done"
    slow = [r.getMessage() for r in handler.records if "slow_job" in r.getMessage()]
    assert len(slow) == 1 and f'"job_id": {job_id}' in slow[0]


class _Recorder(logging.Handler):
    """Keeps what the crontick logger emits, seen on the logger itself (whatever the root logger has)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_an_unknown_type_waits_for_a_process_that_knows_it_spending_no_attempt(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """A rolling deploy: the old code claims a job of a type only the new code has; it waits, then runs once."""
    # A type of its own per run: the handler registered below stays registered in this process (the pooler
    # suite runs this test again).
    new_type = f"t_core.added_in_the_next_deploy_{uuid.uuid4().hex[:8]}"
    job_id = crontick.enqueue(conn, new_type, {"n": 1})
    now = db_now(conn)
    result = tick(database_url, now=now)
    assert (result.jobs.failed, result.jobs.snoozed, result.more) == (0, 1, False)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("pending", 0)
    assert row["last_error"].startswith(f"UnknownJobType: job {job_id} has type {new_type!r}")
    assert f"pid {os.getpid()}" in row["last_error"] and "then it fails" in row["last_error"]
    assert timedelta(seconds=59) <= row["run_after"] - now <= timedelta(seconds=90)  # not again in this tick
    assert tick(database_url, now=now + timedelta(seconds=1)).jobs.claimed == 0
    ran: list[int] = []

    @crontick.handler(new_type)
    def new_code(payload: Any, job: crontick.Job) -> None:
        ran.append(job.id)

    assert tick(database_url, now=now + timedelta(seconds=61)).jobs.succeeded == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], ran) == ("done", 1, [job_id])
    assert conn.execute("select count(*) from job_attempts where job_id = %(id)s", {"id": job_id}).fetchone() == (0,)


def test_an_unknown_type_fails_once_its_grace_has_passed_with_one_alert(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_core.never_deployed", {})
    now = db_now(conn)
    settings = settings_for(database_url, unknown_type_grace_seconds=120)
    for seconds in (1, 65):  # two waits, a minute apart (each puts it back for about a minute)
        assert tick(database_url, settings, now=now + timedelta(seconds=seconds)).jobs.snoozed == 1
    assert tick(database_url, settings, now=now + timedelta(minutes=2, seconds=2)).jobs.failed == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("failed", 1)
    assert row["last_error"].startswith(f"UnknownJobType: job {job_id} has type 't_core.never_deployed'")
    alerts = conn.execute("select count(*) from crontick_alerts where subject = %(s)s", {"s": f"job:{job_id}"})
    assert alerts.fetchone() == (1,)
