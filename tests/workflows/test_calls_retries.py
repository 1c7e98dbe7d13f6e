"""@crontick.step(retries=N, retry_delay_seconds=D) over real ticks: a step that raises is tried again, spending no
job attempt; a delay longer than what is left of the budget parks the job; spent retries fail the attempt."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import psycopg
import pytest

import crontick
from crontick.errors import ConfigError
from tests.support.core_jobs import db_now, job_row, tick

calls: Counter[int] = Counter()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    calls.clear()


def _flaky(job_id: int, failures: int) -> int:
    calls[job_id] += 1
    if calls[job_id] <= failures:
        raise ConnectionError(f"provider down (try {calls[job_id]})")
    return calls[job_id]


@crontick.step(retries=2)
def flaky_twice(job_id: int, failures: int) -> int:
    return _flaky(job_id, failures)


@crontick.step(retries=2)
async def flaky_async(job_id: int, failures: int) -> int:
    return _flaky(job_id, failures)


@crontick.step(retries=1, retry_delay_seconds=60)
def flaky_slow(job_id: int, failures: int) -> int:
    return _flaky(job_id, failures)


@crontick.step(retries=3)
def refuses(job_id: int, failures: int) -> int:
    calls[job_id] += 1
    raise crontick.PermanentError("bad input")


STEPS = {"flaky_twice": flaky_twice, "flaky_async": flaky_async, "flaky_slow": flaky_slow, "refuses": refuses}


@crontick.handler("t_retry.sync")
def sync_handler(payload: Any, job: crontick.Job) -> None:
    job.step("call", STEPS[payload["step"]], job.id, payload["failures"])


@crontick.handler("t_retry.async")
async def async_handler(payload: Any, job: crontick.Job) -> None:
    await job.step("call", STEPS[payload["step"]], job.id, payload["failures"])


def _steps(conn: psycopg.Connection[Any], job_id: int) -> list[tuple[str, str]]:
    rows = conn.execute("select name, kind from job_steps where job_id = %s order by name", (job_id,)).fetchall()
    return [(r[0], r[1]) for r in rows]


@pytest.mark.parametrize(("kind", "step"), [("sync", "flaky_twice"), ("async", "flaky_async"), ("sync", "flaky_async")])
def test_a_step_that_raises_is_tried_again_within_one_attempt(
    database_url: str, conn: psycopg.Connection[Any], kind: str, step: str
) -> None:
    job_id = crontick.enqueue(conn, f"t_retry.{kind}", {"step": step, "failures": 2})
    assert tick(database_url, now=db_now(conn)).jobs.succeeded == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], calls[job_id]) == ("done", 1, 3)
    assert conn.execute("select result from job_steps where job_id = %s", (job_id,)).fetchone() == (3,)


def test_a_step_whose_retries_are_spent_fails_the_attempt_with_its_own_error(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_retry.sync", {"step": "flaky_twice", "failures": 5})
    assert tick(database_url, now=db_now(conn)).jobs.retried == 1
    row = job_row(conn, job_id)
    assert (row["attempts"], calls[job_id]) == (1, 3)
    assert row["last_error"] == "ConnectionError: provider down (try 3)"


def test_a_permanent_error_is_not_tried_again(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_retry.sync", {"step": "refuses", "failures": 0})
    tick(database_url, now=db_now(conn))
    assert (job_row(conn, job_id)["status"], calls[job_id]) == ("failed", 1)


def test_a_delay_longer_than_the_budget_parks_the_job_and_the_retry_runs_then(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_retry.sync", {"step": "flaky_slow", "failures": 1})
    now = db_now(conn)
    result = tick(database_url, now=now)
    assert (result.jobs.snoozed, result.jobs.retried) == (1, 0)  # parked, as job.sleep parks
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], calls[job_id]) == ("pending", 0, 1)
    assert row["run_after"] >= now + timedelta(seconds=59)
    assert _steps(conn, job_id) == [("call#retry1", "sleep")]

    assert tick(database_url, now=now + timedelta(seconds=61)).jobs.succeeded == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], calls[job_id]) == ("done", 1, 2)
    assert _steps(conn, job_id) == [("call", "step"), ("call#retry1", "sleep")]


def test_after_a_parked_retry_the_retries_left_are_counted_from_the_record(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_retry.sync", {"step": "flaky_slow", "failures": 5})
    now = db_now(conn)
    tick(database_url, now=now)
    tick(database_url, now=now + timedelta(seconds=61))  # its one retry, spent: the attempt fails
    row = job_row(conn, job_id)
    assert (row["attempts"], calls[job_id]) == (1, 2) and row["last_error"] == "ConnectionError: provider down (try 2)"


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"retries": -1}, "retries as an integer from 0 to 100"),
        ({"retries": 101}, "retries as an integer from 0 to 100"),
        ({"retries": True}, "retries as an integer"),
        ({"retry_delay_seconds": -1}, "retry_delay_seconds from 0 to 86400"),
        ({"timeout_seconds": 0}, "timeout_seconds above 0"),
        ({"timeout_seconds": "5"}, "timeout_seconds above 0"),
        ({"at_most_once": 1}, "at_most_once as True or False"),
    ],
)
def test_bad_step_options_are_refused_at_declaration(options: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        crontick.step(**options)
