"""Follow-up ticks keep a handler's timeout_seconds promise: a job that comes due inside the budget is claimed by
the follow-up tick, and started only when what is left of the first tick's budget covers its timeout."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import crontick
from crontick.jobs import registry
from tests.support.core_jobs import job_row, settings_for, tick

started: list[int] = []


@pytest.fixture(autouse=True)
def declared() -> Iterator[None]:
    """Handlers that promise 2.5 s and 1.2 s, declared only while a test runs (the start-up check sees them all)."""

    def run(payload: Any, job: crontick.Job) -> None:
        started.append(job.id)

    started.clear()
    crontick.handler("t_promise.long", timeout_seconds=2.5)(run)
    crontick.handler("t_promise.short", timeout_seconds=1.2)(run)
    yield
    registry.unregister("t_promise.long")
    registry.unregister("t_promise.short")


@pytest.mark.parametrize(("job_type", "runs"), [("t_promise.long", False), ("t_promise.short", True)])
def test_a_follow_up_tick_starts_a_job_only_when_its_timeout_fits_what_is_left(
    database_url: str, conn: psycopg.Connection[Any], job_type: str, runs: bool
) -> None:
    job_id = crontick.enqueue(conn, job_type, {})
    conn.execute("update jobs set run_after = now() + interval '1 second' where id = %s", (job_id,))
    # A 3 s budget: the first tick finds the job due in 1 s, waits, and ticks again with about 2 s left.
    result = tick(database_url, settings_for(database_url, time_budget_seconds=3.0))
    assert result.jobs.claimed == 1  # the follow-up tick claimed it
    row = job_row(conn, job_id)
    if runs:
        assert started == [job_id] and (row["status"], row["attempts"]) == ("done", 1)
    else:  # not started: pending, no attempt spent, and the tick says there is more for the next call
        assert started == [] and (row["status"], row["attempts"]) == ("pending", 0)
        assert (result.jobs.released, result.more) == (1, True)
