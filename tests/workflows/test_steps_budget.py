"""Workflows that outlive a tick, over real ticks: a handler the budget stops after recording a step yields (pending,
due at once, no attempt spent, its steps kept), a step that does not fit what is left yields, a cut handler's later
steps raise and record nothing, and a handler that made no progress fails its attempt as before."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from datetime import timedelta
from typing import Any

import psycopg
import pytest

import crontick
from crontick.errors import StepError
from tests.support.core_jobs import db_now, job_row, settings_for, tick

calls: Counter[tuple[int, str]] = Counter()
runs: Counter[int] = Counter()
refused: list[str] = []
skew = [0.0]


@pytest.fixture(autouse=True)
def _fresh() -> None:
    calls.clear()
    runs.clear()
    refused.clear()
    skew[0] = 0.0


def _clock() -> float:
    return time.monotonic() + skew[0]


def _call(job: crontick.Job, name: str) -> str:
    calls[(job.id, name)] += 1
    return name


def _eat_six(job: crontick.Job, name: str) -> str:
    skew[0] += 6.0  # the tick's clock says six seconds went by
    return _call(job, name)


@crontick.step(timeout_seconds=5)
def _five(job: crontick.Job, name: str) -> str:
    return _call(job, name)


@crontick.step(timeout_seconds=10)
def _ten(job: crontick.Job, name: str) -> str:
    return _call(job, name)


@crontick.handler("t_yield.sync")
def sync_blocks_once(payload: Any, job: crontick.Job) -> None:
    runs[job.id] += 1
    job.step("a", _call, job, "a")
    if runs[job.id] == 1:
        time.sleep(1.5)  # the budget (1 s) stops it here; its thread runs on
    try:
        job.step("b", _call, job, "b")
    except StepError as exc:
        refused.append(str(exc))
        raise


@crontick.handler("t_yield.timed", timeout_seconds=0.5)
def sync_outlives_its_timeout(payload: Any, job: crontick.Job) -> None:
    job.step("a", _call, job, "a")
    time.sleep(1.0)  # its own timeout (0.5 s) stops it here; its thread runs on
    try:
        job.step("b", _call, job, "b")
    except StepError as exc:
        refused.append(str(exc))
        raise


@crontick.handler("t_yield.async")
async def async_blocks_once(payload: Any, job: crontick.Job) -> None:
    runs[job.id] += 1
    await job.step("a", _call, job, "a")
    if runs[job.id] == 1:
        await asyncio.sleep(5)
    await job.step("b", _call, job, "b")


@crontick.handler("t_yield.no_progress")
def no_progress(payload: Any, job: crontick.Job) -> None:
    runs[job.id] += 1
    if runs[job.id] == 1:
        time.sleep(1.5)
    job.step("a", _call, job, "a")


@crontick.handler("t_yield.defer_after_a_step")
def defer_after_a_step(payload: Any, job: crontick.Job) -> None:
    job.step("a", _eat_six, job, "a")
    job.step("b", _five, job, "b")


@crontick.handler("t_yield.defer_first")
def defer_first(payload: Any, job: crontick.Job) -> None:
    if payload.get("eat"):
        skew[0] += 6.0  # the handler's own work before its first step
    job.step("b", _five, job, "b")


@crontick.handler("t_yield.eat")
async def eat(payload: Any, job: crontick.Job) -> None:
    skew[0] += 6.0


@crontick.handler("t_yield.never_fits")
def never_fits(payload: Any, job: crontick.Job) -> None:
    job.step("b", _ten, job, "b")


def _steps(conn: psycopg.Connection[Any], job_id: int) -> list[str]:
    rows = conn.execute("select name from job_steps where job_id = %s order by name", (job_id,)).fetchall()
    return [r[0] for r in rows]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_handler_the_budget_stops_after_a_step_yields_and_the_next_tick_resumes_it(
    database_url: str, conn: psycopg.Connection[Any], kind: str
) -> None:
    job_id = crontick.enqueue(conn, f"t_yield.{kind}", {})
    settings = settings_for(database_url, time_budget_seconds=1.0)
    result = tick(database_url, settings, now=db_now(conn))
    assert (result.jobs.yielded, result.jobs.retried, result.jobs.released, result.more) == (1, 0, 0, True)
    assert result.to_json()["jobs"]["yielded"] == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["last_error"]) == ("pending", 0, None)
    assert row["run_after"] <= db_now(conn)  # due at once
    assert _steps(conn, job_id) == ["a"]
    logged = conn.execute("select summary -> 'jobs' from crontick_ticks order by id desc limit 1").fetchone()
    assert logged is not None and (logged[0]["yielded"], logged[0]["released"]) == (1, 0)

    again = tick(database_url, settings, now=db_now(conn))
    assert again.jobs.succeeded == 1 and again.jobs.yielded == 0
    assert (job_row(conn, job_id)["status"], job_row(conn, job_id)["attempts"]) == ("done", 1)
    assert calls[(job_id, "a")] == 1 and calls[(job_id, "b")] == 1
    assert _steps(conn, job_id) == ["a", "b"]


def test_a_cut_handlers_next_step_raises_and_records_nothing(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_yield.sync", {})
    tick(database_url, settings_for(database_url, time_budget_seconds=1.0), now=db_now(conn))
    # The tick waited for the thread to end (asyncio.run does): its step "b" was refused, not run.
    assert len(refused) == 1 and "the tick's budget had already stopped" in refused[0]
    assert calls[(job_id, "b")] == 0 and _steps(conn, job_id) == ["a"]
    assert job_row(conn, job_id)["last_error"] is None  # the yield stands; the refusal changed nothing


def test_a_handler_stopped_without_a_new_step_fails_its_attempt_as_before(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_yield.no_progress", {})
    result = tick(database_url, settings_for(database_url, time_budget_seconds=1.0), now=db_now(conn))
    assert (result.jobs.yielded, result.jobs.retried) == (0, 1)
    row = job_row(conn, job_id)
    assert row["attempts"] == 1 and row["last_error"].startswith("TimeoutError: ")


def test_a_step_that_does_not_fit_what_is_left_yields_after_progress(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_yield.defer_after_a_step", {})
    settings = settings_for(database_url, time_budget_seconds=8.0)
    result = tick(database_url, settings, now=db_now(conn), clock=_clock)  # step a leaves 2 s: b (5 s) waits
    assert (result.jobs.yielded, result.more) == (1, True)
    assert calls[(job_id, "b")] == 0 and _steps(conn, job_id) == ["a"]
    assert job_row(conn, job_id)["attempts"] == 0
    skew[0] = 0.0  # due at once: when it yielded, six seconds on by the tick's clock
    later = db_now(conn) + timedelta(seconds=7)
    assert tick(database_url, settings, now=later, clock=_clock).jobs.succeeded == 1
    assert (calls[(job_id, "a")], calls[(job_id, "b")]) == (1, 1)


def test_a_first_step_that_does_not_fit_yields_when_its_run_began_on_the_tail(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    crontick.enqueue(conn, "t_yield.eat", {})
    job_id = crontick.enqueue(conn, "t_yield.defer_first", {})
    settings = settings_for(database_url, time_budget_seconds=8.0, concurrency=1)
    result = tick(database_url, settings, now=db_now(conn), clock=_clock)
    assert (result.jobs.succeeded, result.jobs.yielded) == (1, 1)
    assert job_row(conn, job_id)["attempts"] == 0 and calls[(job_id, "b")] == 0


def test_a_step_that_does_not_fit_without_progress_fails_the_attempt_saying_why(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_yield.defer_first", {"eat": True})
    result = tick(database_url, settings_for(database_url, time_budget_seconds=8.0), now=db_now(conn), clock=_clock)
    assert (result.jobs.yielded, result.jobs.retried) == (0, 1)
    row = job_row(conn, job_id)
    assert row["attempts"] == 1 and calls[(job_id, "b")] == 0
    assert row["last_error"].startswith("StepDeferred: job ") and "declares timeout_seconds=5" in row["last_error"]


def test_a_step_timeout_above_the_whole_budget_fails_instead_of_yielding_forever(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_yield.never_fits", {})
    tick(database_url, settings_for(database_url, time_budget_seconds=8.0), now=db_now(conn))
    row = job_row(conn, job_id)
    assert row["attempts"] == 1 and "could never start" in row["last_error"]


def test_a_def_handler_its_own_timeout_cut_makes_no_further_step(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_yield.timed", {})
    result = tick(database_url, now=db_now(conn))
    assert (result.jobs.retried, result.jobs.yielded) == (1, 0)  # a handler's timeout fails its attempt, as before
    # The tick waited for the thread to end: its step "b" was refused, not run.
    assert len(refused) == 1 and "its handler's timeout_seconds had already stopped" in refused[0], refused
    assert calls[(job_id, "b")] == 0 and _steps(conn, job_id) == ["a"]
    row = job_row(conn, job_id)
    assert row["attempts"] == 1 and "(its handler's timeout_seconds)" in row["last_error"]
