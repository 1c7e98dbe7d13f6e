"""Runs a claimed batch of jobs concurrently, within the tick's deadline, and records the outcome crontick.jobs.decision gives each."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import random
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

from crontick import retry, tracing
from crontick.jobs import attempts, builtin, decision, registry, shutdown, threads
from crontick.jobs.decision import SUCCEEDED, Ended
from crontick.jobs.job import Job, Outcome
from crontick.jobs.slow import SlowWatch
from crontick.settings import Settings
from crontick.workflows import steps

if TYPE_CHECKING:
    from crontick.jobs.job_spans import BatchSpans

T = TypeVar("T")


async def run_batch(
    jobs: Sequence[Job],
    *,
    now: datetime,
    deadline: float,
    concurrency: int,
    settings: Settings | None = None,
    clock: Callable[[], float] = time.monotonic,
    rand: Callable[[], float] = random.random,
    conn: psycopg.AsyncConnection[Any] | None = None,
    now_at: float | None = None,
) -> list[Outcome]:
    """Run each job at most `concurrency` at a time and return one Outcome per job, in order.

    A job not yet started when the deadline passes, or once the process is exiting
    (crontick.jobs.shutdown), is released (pending again, its attempt not counted). A running
    handler is cancelled at the deadline and counts as a failure.
    Sync (`def`) handlers run in the batch's own threads (crontick.jobs.threads), several jobs per thread hop (see
    _ThreadRun).
    `settings` are the tick's: their secrets are scrubbed from each error, and the built-in job
    types read them (crontick.jobs.builtin.SETTINGS, set for the batch); None: the defaults.
    `conn` (the tick's) is where the handlers' durable steps are loaded and recorded
    (crontick.workflows.steps); None: job.step raises.
    `now_at`: the clock() reading when `now` was read (the tick's start: reminders may have been
    sent since), so that a retry, a snooze, a Retry-After or a sleep counts from when its job ended;
    None: `now` is the batch's start.
    """
    settings = settings if settings is not None else builtin.SETTINGS.get()
    workers = min(concurrency, len(jobs))
    batch = _Batch(jobs, now, deadline, settings, clock, rand, now_at, workers)
    # Traces (crontick.tracing), only when the app uses OpenTelemetry: a span per job, each linked to its enqueuer (the
    # claimed Job's traceparent), no statement of their own.
    if jobs and (tracer := tracing.tracer()) is not None:
        from crontick.jobs.job_spans import BatchSpans

        batch.spans = BatchSpans(tracer, settings.secrets)
    # Each worker task (and each thread hop it makes) copies this context when it starts: every handler
    # of the batch, however it runs, sees the batch's Settings.
    token = builtin.SETTINGS.set(settings)
    # Durable steps: sends nothing until one is used; also what job.time_left reads and what a cut handler's steps check.
    step_batch = steps.begin(conn, jobs, clock, deadline, settings.time_budget_seconds) if conn is not None else None
    batch.steps = step_batch
    # slow_job: one task per batch, and only when a job could run that long before the budget ends.
    slow_after = settings.slow_job_seconds
    watch = asyncio.create_task(batch.slow.watch()) if workers and slow_after < deadline - clock() else None
    try:
        if workers == 1:
            await batch.worker()
        elif workers > 1:
            await asyncio.gather(*(batch.worker() for _ in range(workers)))
    finally:
        builtin.SETTINGS.reset(token)
        if watch is not None:
            watch.cancel()
        if step_batch is not None:
            steps.end(step_batch)
        if batch.threads is not None:
            threads.give_back(batch.threads, workers, idle=batch.runs_in(batch.threads) == 0)
    return batch.outcomes_in_order()


class _Batch:
    """One run_batch call: its jobs not yet started, the outcomes so far, and what deciding them reads.

    `concurrency` workers share one queue, and each holds one timer for the budget: a task,
    semaphore or timer per job would cost more than a quick handler itself.
    """

    def __init__(
        self,
        jobs: Sequence[Job],
        now: datetime,
        deadline: float,
        settings: Settings,
        clock: Callable[[], float],
        rand: Callable[[], float],
        now_at: float | None,
        workers: int = 1,
    ) -> None:
        self.jobs, self.now, self.deadline, self.clock, self.rand = jobs, now, deadline, clock, rand
        self.workers = workers
        # Sync handlers' threads, one per worker, taken when the first sync job starts; the runs given each pool
        # (this one, and one a handler's timeout retired) not ended.
        self.threads: concurrent.futures.ThreadPoolExecutor | None = None
        self._runs: dict[concurrent.futures.ThreadPoolExecutor, int] = {}
        self._runs_lock = threading.Lock()
        self.settings = settings
        started_at = clock()
        self.now_at = started_at if now_at is None else now_at
        self.budget_end = asyncio.get_running_loop().time() + (deadline - started_at)
        self.pending = _Pending(jobs)
        self.outcomes: dict[int, Outcome] = {}
        self.spans: BatchSpans | None = None
        self.steps: steps.StepBatch | None = None
        self.slow = SlowWatch(settings.slow_job_seconds, clock)

    def fits(self, job: Job) -> bool:
        """No start on the budget's tail: a handler's timeout_seconds is a promise, so its job starts only when what
        is left of the budget covers it; one that does not fit is released (pending, its attempt not counted)."""
        entry = registry.get(job.type)
        return entry is None or entry.timeout_seconds is None or self.clock() + entry.timeout_seconds <= self.deadline

    def started(self, index: int, job: Job, began: float) -> None:
        """A job's run begins: watched for slow_job, and what job.time_left counts down to (its timeout's end, else
        the budget's)."""
        self.slow.started(index, job, began)
        if self.steps is not None:
            entry = registry.get(job.type)
            limit = None if entry is None else entry.timeout_seconds
            self.steps.budget.started(job, self.deadline if limit is None else min(self.deadline, began + limit))

    def finish(self, index: int, job: Job, ended: Ended) -> None:
        """Record how the job at `index` ended: decided here, with the time it ended (on the tick's clock)."""
        slow, ms = self.slow.ended(index)
        if ended is SUCCEEDED:
            self.outcomes[index] = decision.succeeded(job)._replace(slow=slow, ms=ms)
            return
        finished = self.now + timedelta(seconds=self.clock() - self.now_at)
        entry = registry.get(job.type)
        policy = entry.retry if entry else retry.DEFAULT_POLICY
        rules = decision.Rules(
            self.settings.secrets, self.settings.unknown_type_grace_seconds, f"{socket.gethostname()} pid {os.getpid()}"
        )
        self.outcomes[index] = decision.decide(job, ended, finished, self.rand(), policy, rules)._replace(
            slow=slow, ms=ms
        )

    async def worker(self) -> None:
        pending, clock, deadline = self.pending, self.clock, self.deadline
        if not pending:  # the workers before it took every job without ever waiting (quick handlers)
            return
        running: Running | _ThreadRun | None = None
        try:
            async with asyncio.timeout_at(self.budget_end):
                # shutdown: once the process is exiting no job starts; outcomes_in_order releases the rest.
                while clock() < deadline and not shutdown.begun() and (item := pending.take()) is not None:
                    index, job = item
                    if not self.fits(job):  # released by outcomes_in_order: a later tick starts it
                        continue
                    if _in_thread_run(job):
                        running = run = _ThreadRun(pending, self.finish, clock, deadline, self.spans, self.started)
                        await self.in_thread(run.run, index, job)
                    elif _timed_in_thread(job):
                        running = (index, job, clock())
                        self.started(index, job, running[2])
                        self.finish(index, job, await self.timed_in_thread(job))
                    else:
                        running = (index, job, clock())
                        self.started(index, job, running[2])
                        spans = self.spans
                        attempt = (
                            attempts.attempt(job) if spans is None else spans.run(job, partial(attempts.attempt, job))
                        )
                        self.finish(index, job, await attempt)
                    running = None
        except TimeoutError:
            stopped = running.stop() if isinstance(running, _ThreadRun) else running
            if stopped is not None:  # the budget ran out inside this handler
                index, job, began = stopped
                # Its steps from here on raise (a def handler's thread runs on); with a step recorded in this run it yields.
                new_steps = self.steps.budget.stop(job) if self.steps is not None else 0
                text = f"TimeoutError: job {job.id} ({job.type}) was stopped after {clock() - began:.1f} s (the tick's time budget)"
                self.finish(index, job, Ended(text, budget_stopped=True, new_steps=new_steps))

    def in_thread(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """What asyncio.to_thread(fn, *args) does (the worker's context copied into the thread; cancelling the wait
        leaves the thread to finish), in one of the batch's threads."""
        if self.threads is None:
            self.threads = threads.take(self.workers)
        pool = self.threads
        with self._runs_lock:
            self._runs[pool] = self._runs.get(pool, 0) + 1
        context = contextvars.copy_context()
        return asyncio.get_running_loop().run_in_executor(pool, context.run, self.thread_run, pool, fn, *args)

    def thread_run(self, pool: concurrent.futures.ThreadPoolExecutor, fn: Callable[..., T], *args: Any) -> T:
        try:
            return fn(*args)
        finally:  # this thread takes no more of the batch's jobs: the step writes' group commit waits for it no more
            steps.thread_left()
            with self._runs_lock:
                self._runs[pool] -= 1

    def runs_in(self, pool: concurrent.futures.ThreadPoolExecutor) -> int:
        """How many runs given `pool` have not ended (a handler the budget or its timeout cut still holds a thread)."""
        with self._runs_lock:
            return self._runs.get(pool, 0)

    async def timed_in_thread(self, job: Job) -> Ended:
        """A sync handler with its own timeout_seconds: a hop of its own to the batch's threads, waited for that long.

        At its timeout the wait ends and the thread is left to finish, as asyncio.to_thread's would be; its next
        job.step raises (crontick.workflows.budget), and the batch's later jobs get fresh threads: the cut one may
        never end, and a pool of one thread per worker would make a later job wait behind it.
        """
        entry = registry.get(job.type)
        assert entry is not None and entry.timeout_seconds is not None
        limit = asyncio.timeout(entry.timeout_seconds)
        try:
            async with limit:
                return await self.in_thread(attempts.attempt_in_thread, job, self.spans)
        except TimeoutError:
            if not limit.expired():  # not ours (the awaited run returns its handler's errors, it does not raise them)
                raise
        if self.steps is not None:
            self.steps.budget.stop(job, by="its handler's timeout_seconds")
        if self.threads is not None:
            retired, self.threads = self.threads, None
            threads.give_back(retired, self.workers, idle=False)
        return Ended(
            f"TimeoutError: job {job.id} ({job.type}) was stopped after {entry.timeout_seconds:.1f} s (its handler's timeout_seconds)"
        )

    def outcomes_in_order(self) -> list[Outcome]:
        """One outcome per job: whatever no worker reached before the deadline (or the process's exit) goes back, its
        attempt not counted."""
        outcomes = self.outcomes
        return [
            outcomes.get(i) or Outcome(job.id, job.attempt, "pending", job.attempt - 1)
            for i, job in enumerate(self.jobs)
        ]


Running = tuple[int, Job, float]  # (index in the batch, job, when it started)


class _Pending:
    """The batch's jobs not yet started, shared by the workers on the loop and their threads."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        self._items = deque(enumerate(jobs))
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._items)

    def take(self, *, thread_run_only: bool = False) -> tuple[int, Job] | None:
        with self._lock:
            if not self._items or (thread_run_only and not _in_thread_run(self._items[0][1])):
                return None
            return self._items.popleft()


def _in_thread_run(job: Job) -> bool:
    """A sync handler without its own timeout_seconds can share a thread hop with the jobs after it.

    One with a timeout_seconds keeps a hop of its own (_timed_in_thread), so that the timeout can stop waiting for it.
    """
    entry = registry.get(job.type)
    return entry is not None and not entry.is_async and entry.timeout_seconds is None


def _timed_in_thread(job: Job) -> bool:
    """A sync handler with its own timeout_seconds: one job per hop to the batch's threads (_Batch.timed_in_thread)."""
    entry = registry.get(job.type)
    return entry is not None and not entry.is_async and entry.timeout_seconds is not None


class _ThreadRun:
    """Sync jobs run back to back in one worker thread: one thread hop for a run of them, not one per job.

    The guarantees stay those of a hop per job. The event loop never runs a sync handler. The
    thread takes a job from the shared queue only while the next one is a sync one and the
    deadline has not passed, so jobs it never reaches stay for the other workers, or are
    released. At the budget the worker on the loop calls stop(): the job running in the
    thread is recorded as stopped (the thread cannot be killed; it is left to finish, as a
    hop per job would leave it) and the thread takes nothing more. `lock` orders the two, so
    a job gets either its own outcome or the timeout, never both.
    """

    def __init__(
        self,
        pending: _Pending,
        finish: Callable[[int, Job, Ended], None],
        clock: Callable[[], float],
        deadline: float,
        spans: BatchSpans | None = None,
        started: Callable[[int, Job, float], None] | None = None,
    ) -> None:
        self.pending, self.finish, self.clock, self.deadline = pending, finish, clock, deadline
        self.spans, self.started = spans, started
        self.lock = threading.Lock()
        self.current: Running | None = None
        self.stopped = False

    def run(self, index: int, job: Job) -> None:
        """In the worker thread: this job, then each next sync job until the queue, the run or the time ends."""
        item: tuple[int, Job] | None = (index, job)
        while item is not None:
            index, job = item
            with self.lock:
                if self.halted():
                    return
                self.current = (index, job, self.clock())
                if self.started is not None:
                    self.started(index, job, self.current[2])
            ended = attempts.attempt_in_thread(job, self.spans)
            with self.lock:
                if self.halted():  # the budget ran out meanwhile: the timeout recorded for it stands
                    return
                self.current = None
                self.finish(index, job, ended)
            going_on = self.clock() < self.deadline and not shutdown.begun()
            item = self.pending.take(thread_run_only=True) if going_on else None

    def halted(self) -> bool:
        """Whether stop() was called (read under `lock`; the loop's thread sets it)."""
        return self.stopped

    def stop(self) -> Running | None:
        """On the loop, at the budget: the job still running in the thread, if any; nothing more starts."""
        with self.lock:
            self.stopped = True
            return self.current
