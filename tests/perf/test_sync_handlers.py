"""Sync (`def`) handlers share thread hops, yet keep the guarantees of a hop per job.

A sync handler never runs on the event loop's thread; one slow sync handler holds only its own
worker, never the others, and never the tick past its budget; jobs not started by the deadline
are released. Driven through crontick.jobs.runner.run_batch with real threads, no database needed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

import crontick
from crontick.jobs.job import Job, Outcome
from crontick.jobs.runner import run_batch

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
threads: list[str] = []
release = threading.Event()  # set at the end of each test, so no stuck thread outlives it


@crontick.handler("t_sync.quick")
def quick(payload: Any, job: crontick.Job) -> None:
    threads.append(threading.current_thread().name)


@crontick.handler("t_sync.stuck")
def stuck(payload: Any, job: crontick.Job) -> None:
    release.wait(10)


@crontick.handler("t_sync.snoozes")
def snoozes(payload: Any, job: crontick.Job) -> None:
    raise crontick.Snooze(60)


@crontick.handler("t_sync.refuses")
def refuses(payload: Any, job: crontick.Job) -> None:
    raise crontick.PermanentError("the provider said no")


@crontick.handler("t_sync.async_quick")
async def async_quick(payload: Any, job: crontick.Job) -> None:
    threads.append(threading.current_thread().name)


def jobs(*types: str) -> list[Job]:
    return [Job(id=i + 1, type=t, payload={}, attempt=1, max_attempts=4, created_at=NOW) for i, t in enumerate(types)]


def run(batch: Sequence[Job], *, budget_seconds: float, concurrency: int) -> tuple[list[Outcome], float]:
    """The outcomes, and the seconds until run_batch returned them (the tick goes on from there)."""

    async def go() -> tuple[list[Outcome], float]:
        began = time.monotonic()
        try:
            outcomes = await run_batch(batch, now=NOW, deadline=began + budget_seconds, concurrency=concurrency)
            return outcomes, time.monotonic() - began
        finally:
            release.set()  # before asyncio.run waits for the executor's threads on its way out

    threads.clear()
    release.clear()
    return asyncio.run(go())


def test_sync_handlers_never_run_on_the_event_loop_thread() -> None:
    outcomes, _ = run(jobs(*["t_sync.quick"] * 50, "t_sync.async_quick"), budget_seconds=5, concurrency=4)
    assert [o.status for o in outcomes] == ["done"] * 51
    loop_thread = threading.current_thread().name  # asyncio.run runs the loop on this thread
    assert len(threads) == 51
    assert threads.count(loop_thread) == 1  # the async handler's; all 50 sync ones ran in worker threads


def test_a_run_of_sync_jobs_shares_thread_hops(monkeypatch: pytest.MonkeyPatch) -> None:
    hops = []
    submit = ThreadPoolExecutor.submit

    def counted(pool: ThreadPoolExecutor, func: Callable[..., Any], /, *args: Any) -> Any:
        hops.append(func)
        return submit(pool, func, *args)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", counted)  # the batch's threads (crontick.jobs.threads)
    outcomes, _ = run(jobs(*["t_sync.quick"] * 100), budget_seconds=5, concurrency=2)
    assert all(o.status == "done" for o in outcomes)
    assert 1 <= len(hops) <= 2, len(hops)  # one per worker at most, where a hop per job made 100


def test_one_stuck_sync_handler_does_not_hold_the_others() -> None:
    batch = jobs("t_sync.stuck", *["t_sync.quick"] * 30)
    outcomes, seconds = run(batch, budget_seconds=0.5, concurrency=2)
    assert seconds < 2, seconds  # the tick ends at its budget, not when the stuck handler returns
    assert [o.status for o in outcomes[1:]] == ["done"] * 30  # the other worker ran them all
    stopped = outcomes[0]
    assert stopped.status == "pending" and stopped.attempts == 1  # a failed attempt, retried later
    assert stopped.last_error is not None and stopped.last_error.startswith(
        "TimeoutError: job 1 (t_sync.stuck) was stopped"
    )


def test_jobs_behind_a_stuck_one_in_the_same_thread_run_are_released_at_the_deadline() -> None:
    batch = jobs("t_sync.quick", "t_sync.stuck", *["t_sync.quick"] * 5)
    outcomes, seconds = run(batch, budget_seconds=0.4, concurrency=1)
    assert seconds < 2, seconds
    assert outcomes[0].status == "done"
    assert outcomes[1].last_error is not None and "TimeoutError" in outcomes[1].last_error
    # Never started: pending again with the attempt handed back, so they cost the job nothing.
    assert all((o.status, o.attempts, o.last_error) == ("pending", 0, None) for o in outcomes[2:])


def test_a_thread_run_reads_snoozes_and_permanent_errors_as_a_hop_per_job_would() -> None:
    outcomes, _ = run(jobs("t_sync.snoozes", "t_sync.refuses", "t_sync.quick"), budget_seconds=5, concurrency=1)
    snoozed, refused, done = outcomes
    assert (snoozed.status, snoozed.attempts, snoozed.snoozed) == ("pending", 0, True)  # attempt handed back
    assert snoozed.run_after is not None and snoozed.run_after >= NOW
    assert (refused.status, refused.last_error) == ("failed", "PermanentError: the provider said no")
    assert done.status == "done"
