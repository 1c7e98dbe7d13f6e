"""No start on the budget's tail (CONTRACT.md "Workflows that outlive a tick"): a handler's timeout_seconds is a
promise, job.time_left counts down to it, and a timeout above the whole budget is refused at start-up."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

import crontick
from crontick.errors import ConfigError
from crontick.jobs import registry
from crontick.runtime import Runtime
from tests.support.core_jobs import db_now, job_row, settings_for, tick

PROMISED = "t_budget.promised"
started: list[int] = []
left: list[float] = []
skew = [0.0]


def _clock() -> float:
    """The tick's clock, moved on by handlers that pretend to take long."""
    return time.monotonic() + skew[0]


@crontick.handler("t_budget.eats_six_seconds")
async def eats_six_seconds(payload: Any, job: crontick.Job) -> None:
    skew[0] += 6.0


@pytest.fixture(autouse=True)
def promised() -> Iterator[None]:
    """A handler that promises 5 s, declared only while a test runs (a start-up check elsewhere sees every handler)."""

    async def run(payload: Any, job: crontick.Job) -> None:
        started.append(job.id)
        left.append(job.time_left())

    started.clear()
    left.clear()
    skew[0] = 0.0
    crontick.handler(PROMISED, timeout_seconds=5)(run)
    yield
    registry.unregister(PROMISED)


def test_a_job_whose_timeout_does_not_fit_what_is_left_is_not_started_and_keeps_its_attempts(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    first = crontick.enqueue(conn, "t_budget.eats_six_seconds", {})
    promised = crontick.enqueue(conn, PROMISED, {})
    settings = settings_for(database_url, time_budget_seconds=8.0, concurrency=1)
    result = tick(database_url, settings, now=db_now(conn), clock=_clock)  # the first job leaves 2 s of 8
    assert started == []
    assert (result.jobs.succeeded, result.jobs.released, result.more) == (1, 1, True)
    row = job_row(conn, promised)
    assert (row["status"], row["attempts"], row["last_error"]) == ("pending", 0, None)
    assert row["run_after"] <= db_now(conn)  # due at once
    assert job_row(conn, first)["status"] == "done"

    skew[0] = 0.0
    again = tick(database_url, settings, now=db_now(conn), clock=_clock)  # a whole budget: it starts
    assert started == [promised] and again.jobs.succeeded == 1
    assert (job_row(conn, promised)["status"], job_row(conn, promised)["attempts"]) == ("done", 1)
    assert 4.0 < left[0] <= 5.0  # job.time_left: to its own timeout, which ends before the budget


def test_a_job_that_fits_starts_with_the_budget_left_as_its_time_left(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    crontick.enqueue(conn, PROMISED, {})
    settings = settings_for(database_url, time_budget_seconds=5.5, concurrency=1)
    assert tick(database_url, settings, now=db_now(conn), clock=_clock).jobs.succeeded == 1
    assert len(left) == 1 and 4.0 < left[0] <= 5.0


def test_a_handler_timeout_above_the_whole_budget_is_refused_at_start_up(database_url: str) -> None:
    with pytest.raises(
        ConfigError, match=r"at most CRONTICK_TIME_BUDGET_SECONDS \(4 s\), got t_budget.promised \(5 s\)"
    ):
        Runtime(settings_for(database_url, time_budget_seconds=4.0), strict=True)
    Runtime(settings_for(database_url, time_budget_seconds=5.0), strict=True)  # within it: fine


@pytest.mark.parametrize("bad", [0, -1, True, "5"])
def test_a_bad_timeout_is_refused_at_declaration(bad: Any) -> None:
    register: Callable[..., Any] = crontick.handler
    with pytest.raises(ConfigError, match=r"expected timeout_seconds as a number of seconds above 0"):
        register("t_budget.bad", timeout_seconds=bad)
