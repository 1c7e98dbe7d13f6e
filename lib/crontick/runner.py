"""Runs a claimed batch of jobs concurrently, within the tick's deadline, and decides each outcome."""

from __future__ import annotations

import asyncio
import contextvars
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from . import backoff, handlers, logs
from .errors import PermanentError, RetryableError, Snooze
from .handlers import Handler, Job
from .queue import Outcome, UndecodablePayload

SLOW_JOB_SECONDS = 8.0
LAST_ERROR_MAX_CHARS = 2000
# How many times one job may snooze (raise crontick.Snooze); after that a snooze counts as a failed attempt.
MAX_SNOOZES = 100


class Ended(NamedTuple):
    """How one handler call ended: error None is success; a snooze asks to run again later, uncounted."""

    error: str | None = None
    permanent: bool = False
    retry_after_seconds: float | None = None
    snooze_seconds: float | None = None


SUCCEEDED = Ended()  # one value for every success: the common case builds nothing


async def run_batch(
    jobs: Sequence[Job],
    *,
    now: datetime,
    deadline: float,
    concurrency: int,
    secrets: Sequence[str] = (),
    clock: Callable[[], float] = time.monotonic,
    rand: Callable[[], float] = random.random,
) -> list[Outcome]:
    """Run each job at most `concurrency` at a time and return one Outcome per job, in order.

    A job not yet started when the deadline passes is released (pending again, its attempt
    not counted). A running handler is cancelled at the deadline and counts as a failure.
    Sync (`def`) handlers run in worker threads, several jobs per thread hop (see _ThreadRun).
    """
    started_at = clock()
    budget_end = asyncio.get_running_loop().time() + (deadline - started_at)
    outcomes: dict[int, Outcome] = {}

    def finish(index: int, job: Job, ended: Ended) -> None:
        outcomes[index] = decide(job, ended)

    def decide(job: Job, ended: Ended) -> Outcome:
        if ended is SUCCEEDED:
            return Outcome(job.id, job.attempt, "done", job.attempt)
        finished = now + timedelta(seconds=clock() - started_at)
        if ended.snooze_seconds is not None:
            if job.snoozes < MAX_SNOOZES:  # pending again, its attempt handed back
                return Outcome(
                    job.id,
                    job.attempt,
                    "pending",
                    job.attempt - 1,
                    finished + timedelta(seconds=ended.snooze_seconds),
                    None,
                    True,
                )
            ended = Ended(
                f"SnoozeLimit: job {job.id} ({job.type}) asked to snooze after {job.snoozes} snoozes, the most "
                f"allowed (crontick.runner.MAX_SNOOZES = {MAX_SNOOZES}); this attempt counts as failed"
            )
        if ended.error is None:
            return Outcome(job.id, job.attempt, "done", job.attempt)
        entry = handlers.get(job.type)
        policy = entry.retry if entry else backoff.DEFAULT_POLICY
        decision = backoff.after_failure(
            job.attempt, job.max_attempts, policy, finished, rand(), ended.permanent, ended.retry_after_seconds
        )
        text = scrub(ended.error, secrets)
        if isinstance(decision, backoff.Retry):
            return Outcome(job.id, job.attempt, "pending", job.attempt, decision.run_after, text)
        return Outcome(job.id, job.attempt, "failed", job.attempt, None, text)

    # `concurrency` workers share one queue, and each holds one timer for the budget: a task,
    # semaphore or timer per job would cost more than a quick handler itself.
    pending = _Pending(jobs)

    async def worker() -> None:
        if not pending:  # the workers before it took every job without ever waiting (quick handlers)
            return
        running: Running | _ThreadRun | None = None
        try:
            async with asyncio.timeout_at(budget_end):
                while clock() < deadline and (item := pending.take()) is not None:
                    index, job = item
                    if _in_thread_run(job):
                        running = run = _ThreadRun(pending, finish, clock, deadline)
                        await asyncio.to_thread(run.run, index, job)
                    else:
                        running = (index, job, clock())
                        finish(index, job, await _attempt(job, clock))
                    running = None
        except TimeoutError:
            stopped = running.stop() if isinstance(running, _ThreadRun) else running
            if stopped is not None:  # the budget ran out inside this handler
                index, job, began = stopped
                text = f"TimeoutError: job {job.id} ({job.type}) was stopped after {clock() - began:.1f} s (the tick's time budget)"
                finish(index, job, Ended(text))

    workers = min(concurrency, len(jobs))
    if workers == 1:
        await worker()
    elif workers > 1:
        await asyncio.gather(*(worker() for _ in range(workers)))
    # Whatever no worker reached before the deadline goes back, its attempt not counted.
    return [outcomes.get(i) or Outcome(job.id, job.attempt, "pending", job.attempt - 1) for i, job in enumerate(jobs)]


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

    One with a timeout_seconds keeps a hop of its own, so that the timeout can stop waiting for it.
    """
    entry = handlers.get(job.type)
    return entry is not None and not entry.is_async and entry.timeout_seconds is None


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
    ) -> None:
        self.pending, self.finish, self.clock, self.deadline = pending, finish, clock, deadline
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
            ended = _attempt_in_thread(job, self.clock)
            with self.lock:
                if self.halted():  # the budget ran out meanwhile: the timeout recorded for it stands
                    return
                self.current = None
                self.finish(index, job, ended)
            item = self.pending.take(thread_run_only=True) if self.clock() < self.deadline else None

    def halted(self) -> bool:
        """Whether stop() was called (read under `lock`; the loop's thread sets it)."""
        return self.stopped

    def stop(self) -> Running | None:
        """On the loop, at the budget: the job still running in the thread, if any; nothing more starts."""
        with self.lock:
            self.stopped = True
            return self.current


async def _attempt(job: Job, clock: Callable[[], float]) -> Ended:
    """Run one handler and say how it ended."""
    entry = handlers.get(job.type)
    if entry is None:
        return Ended(_unknown_type(job), True)
    if isinstance(job.payload, UndecodablePayload):
        return Ended(f"PermanentError: job {job.id} ({job.type}): {job.payload.reason}", True)
    began = clock()
    limit = None if entry.timeout_seconds is None else asyncio.timeout(entry.timeout_seconds)
    try:
        if limit is None and entry.is_async:  # the common case, without a frame of its own
            await entry.func(job.payload, job)  # type: ignore[misc]  # the tick's budget, held by the worker, still bounds it
        elif limit is None:
            await _call(entry, job)
        else:
            async with limit:
                await _call(entry, job)
    except TimeoutError as exc:
        if limit is None or not limit.expired():  # the handler's own timeout (a socket's, say)
            return Ended(_describe(exc))
        return Ended(
            f"TimeoutError: job {job.id} ({job.type}) was stopped after {entry.timeout_seconds:.1f} s (its handler's timeout_seconds)"
        )
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure, even sys.exit() in a handler, is recorded and retried
        return _ended(exc)
    finally:
        if clock() - began > SLOW_JOB_SECONDS:
            _note_slow(job, clock() - began)
    return SUCCEEDED


def _attempt_in_thread(job: Job, clock: Callable[[], float]) -> Ended:
    """_attempt for a sync handler in a _ThreadRun (which only takes jobs whose handler exists)."""
    entry = handlers.get(job.type)
    assert entry is not None
    began = clock()
    try:
        # Each job in its own copy of the context, as a hop per job would give it.
        contextvars.copy_context().run(entry.func, job.payload, job)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - as in _attempt
        return _ended(exc)
    finally:
        if clock() - began > SLOW_JOB_SECONDS:
            _note_slow(job, clock() - began)
    return SUCCEEDED


def _ended(exc: BaseException) -> Ended:
    """How a handler that raised `exc` ended: a snooze, a permanent or a retryable failure."""
    if isinstance(exc, Snooze):
        return Ended(snooze_seconds=exc.seconds)
    if isinstance(exc, PermanentError):
        return Ended(_describe(exc), True)
    if isinstance(exc, RetryableError):  # a provider's 429 or 503 may say how long to wait
        return Ended(_describe(exc), retry_after_seconds=exc.retry_after_seconds)
    return Ended(_describe(exc))


def _note_slow(job: Job, seconds: float) -> None:
    logs.warning("slow_job", job_id=job.id, type=job.type, seconds=round(seconds, 1))


async def _call(entry: Handler, job: Job) -> None:
    if entry.is_async:
        await entry.func(job.payload, job)  # type: ignore[misc]
    else:
        await asyncio.to_thread(entry.func, job.payload, job)


def _unknown_type(job: Job) -> str:
    modules = ", ".join(handlers.loaded_modules()) or "none (set CRONTICK_HANDLERS)"
    known = ", ".join(handlers.registered_types())
    return (
        f"UnknownJobType: job {job.id} has type {job.type!r}, which no handler is registered for "
        f"(handler modules loaded: {modules}; registered types: {known})"
    )


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def scrub(text: str, secrets: Sequence[str]) -> str:
    """Remove every configured secret from error text before it is stored, and cap its length."""
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    if len(text) > LAST_ERROR_MAX_CHARS:
        text = text[: LAST_ERROR_MAX_CHARS - 1] + "…"
    return text
