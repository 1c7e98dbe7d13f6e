"""The threads sync (`def`) handlers run in: one per worker however few CPUs the host has, kept for the next batch,
never handed on while a handler the budget cut still holds one, and with the batch's context as asyncio.to_thread
gave it. Driven through crontick.jobs.runner.run_batch with real threads, no database needed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

import crontick
from crontick.jobs.job import Job, Outcome
from crontick.jobs.runner import run_batch

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
AT_ONCE = 40  # above the loop's default executor's 32 threads at most, whatever the host's CPUs
met = threading.Barrier(AT_ONCE, timeout=10)
ran_in: set[threading.Thread] = set()
release = threading.Event()
seen: list[str] = []
asked: ContextVar[str] = ContextVar("asked", default="not copied")


@crontick.handler("t_threads.meet")
def meet(payload: Any, job: crontick.Job) -> None:
    met.wait()  # every handler of the batch waits here until all of them have arrived


@crontick.handler("t_threads.name")
def name(payload: Any, job: crontick.Job) -> None:
    ran_in.add(threading.current_thread())


@crontick.handler("t_threads.stuck")
def stuck(payload: Any, job: crontick.Job) -> None:
    release.wait(10)


@crontick.handler("t_threads.context")
def context(payload: Any, job: crontick.Job) -> None:
    seen.append(asked.get())
    asked.set("changed in the handler")


def jobs(*types: str) -> list[Job]:
    return [Job(id=i + 1, type=t, payload={}, attempt=1, max_attempts=4, created_at=NOW) for i, t in enumerate(types)]


def run(batch: Sequence[Job], *, concurrency: int, budget_seconds: float = 20.0) -> list[Outcome]:
    async def go() -> list[Outcome]:
        try:
            return await run_batch(batch, now=NOW, deadline=time.monotonic() + budget_seconds, concurrency=concurrency)
        finally:
            release.set()

    release.clear()
    return asyncio.run(go())


def test_every_worker_runs_a_sync_handler_at_once_however_few_the_cpus() -> None:
    outcomes = run(jobs(*["t_threads.meet"] * AT_ONCE), concurrency=AT_ONCE)
    # With the loop's default executor (min(32, CPUs + 4) threads) the barrier broke: some handlers never started.
    assert [o.status for o in outcomes] == ["done"] * AT_ONCE, {o.last_error for o in outcomes}


def test_the_next_batch_starts_no_thread() -> None:
    assert all(o.status == "done" for o in run(jobs(*["t_threads.name"] * 20), concurrency=4))
    before = set(threading.enumerate())
    ran_in.clear()
    assert all(o.status == "done" for o in run(jobs(*["t_threads.name"] * 20), concurrency=4))
    assert ran_in and ran_in <= before, (ran_in, before)


def test_a_thread_a_cut_handler_holds_is_not_handed_to_the_next_batch() -> None:
    cut = run(jobs("t_threads.stuck"), concurrency=1, budget_seconds=0.3)
    assert cut[0].status == "pending" and (cut[0].last_error or "").startswith("TimeoutError")
    release.clear()  # the stuck handler holds its thread again until this test ends
    try:
        # Given the cut batch's one thread, this job would wait behind the stuck one and be released at the deadline.
        assert [o.status for o in run(jobs("t_threads.name"), concurrency=1, budget_seconds=2.0)] == ["done"]
    finally:
        release.set()


def test_a_handler_sees_the_batchs_context_and_its_changes_stay_its_own() -> None:
    seen.clear()

    async def go() -> list[Outcome]:
        asked.set("the batch's")
        outcomes = await run_batch(
            jobs(*["t_threads.context"] * 3), now=NOW, deadline=time.monotonic() + 20, concurrency=1
        )
        assert asked.get() == "the batch's"  # a handler's set() changed its own copy
        return outcomes

    assert all(o.status == "done" for o in asyncio.run(go()))
    assert seen == ["the batch's"] * 3  # each job in a fresh copy: the one before's set() is not seen


timed_ran_in: list[str] = []
timed_threads: list[threading.Thread] = []
timed_release = threading.Event()


# 0.5 s: its module is imported with every test, and an app started with a budget under a declared timeout refuses
# to run (0.5 s is the least budget a live app is given in this suite).
@crontick.handler("t_threads.timed", timeout_seconds=0.5)
def timed(payload: Any, job: crontick.Job) -> None:
    timed_ran_in.append(threading.current_thread().name)
    timed_threads.append(threading.current_thread())
    seen.append(asked.get())


@crontick.handler("t_threads.timed_stuck", timeout_seconds=0.3)
def timed_stuck(payload: Any, job: crontick.Job) -> None:
    timed_threads.append(threading.current_thread())
    timed_release.wait(10)


def test_a_sync_handler_with_its_own_timeout_runs_in_the_batchs_threads_with_the_batchs_context() -> None:
    timed_ran_in.clear()
    seen.clear()

    async def go() -> list[Outcome]:
        asked.set("the batch's")
        return await run_batch(jobs(*["t_threads.timed"] * 4), now=NOW, deadline=time.monotonic() + 20, concurrency=2)

    assert [o.status for o in asyncio.run(go())] == ["done"] * 4
    # asyncio.to_thread's threads are the loop's default executor's, named asyncio_N.
    assert timed_ran_in and all(n.startswith("crontick-job") for n in timed_ran_in), timed_ran_in
    assert seen == ["the batch's"] * 4


def test_a_sync_handler_cut_by_its_timeout_leaves_its_thread_and_the_next_job_a_fresh_one() -> None:
    timed_threads.clear()
    timed_release.clear()
    try:
        outcomes = run(jobs("t_threads.timed_stuck", "t_threads.name", "t_threads.timed"), concurrency=1)
        assert [o.status for o in outcomes] == ["pending", "done", "done"], [o.last_error for o in outcomes]
        assert outcomes[0].attempts == 1 and "its handler's timeout_seconds" in (outcomes[0].last_error or "")
        # The cut handler still holds its thread: the jobs after it ran in another, not queued behind it.
        assert len(timed_threads) == 2 and timed_threads[0] is not timed_threads[1], timed_threads
    finally:
        timed_release.set()
