"""Runs a claimed batch of jobs concurrently, within the tick's deadline, and decides each outcome."""

from __future__ import annotations

import asyncio
import random
import time
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
    """
    started_at = clock()
    budget_end = asyncio.get_running_loop().time() + (deadline - started_at)
    outcomes: dict[int, Outcome] = {}

    def decide(job: Job, ended: Ended) -> Outcome:
        finished = now + timedelta(seconds=clock() - started_at)
        if ended.snooze_seconds is not None:
            if job.snoozes < MAX_SNOOZES:  # pending again, its attempt handed back
                return Outcome(job.id, job.attempt, "pending", job.attempt - 1,
                               finished + timedelta(seconds=ended.snooze_seconds), None, True)
            ended = Ended(f"SnoozeLimit: job {job.id} ({job.type}) asked to snooze after {job.snoozes} snoozes, the most "
                          f"allowed (crontick.runner.MAX_SNOOZES = {MAX_SNOOZES}); this attempt counts as failed")
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

    # `concurrency` workers share one iterator, and each holds one timer for the budget: a
    # task, semaphore or timer per job would cost more than a quick handler itself.
    pending = iter(enumerate(jobs))

    async def worker() -> None:
        running: tuple[int, Job, float] | None = None
        try:
            async with asyncio.timeout_at(budget_end):
                for index, job in pending:
                    if clock() >= deadline:
                        break
                    running = (index, job, clock())
                    outcomes[index] = decide(job, await _attempt(job, clock))
                    running = None
        except TimeoutError:
            if running is not None:  # the budget ran out inside this handler
                index, job, began = running
                stopped = f"TimeoutError: job {job.id} ({job.type}) was stopped after {clock() - began:.1f} s (the tick's time budget)"
                outcomes[index] = decide(job, Ended(stopped))

    workers = min(concurrency, len(jobs))
    if workers == 1:
        await worker()
    elif workers > 1:
        await asyncio.gather(*(worker() for _ in range(workers)))
    # Whatever no worker reached before the deadline goes back, its attempt not counted.
    return [outcomes.get(i) or Outcome(job.id, job.attempt, "pending", job.attempt - 1) for i, job in enumerate(jobs)]


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
        if limit is None:  # the tick's budget, held by the worker, still bounds it
            await _call(entry, job)
        else:
            async with limit:
                await _call(entry, job)
    except Snooze as exc:
        return Ended(snooze_seconds=exc.seconds)
    except PermanentError as exc:
        return Ended(_describe(exc), True)
    except RetryableError as exc:  # a provider's 429 or 503 may say how long to wait
        return Ended(_describe(exc), retry_after_seconds=exc.retry_after_seconds)
    except TimeoutError as exc:
        if limit is None or not limit.expired():  # the handler's own timeout (a socket's, say)
            return Ended(_describe(exc))
        return Ended(f"TimeoutError: job {job.id} ({job.type}) was stopped after {entry.timeout_seconds:.1f} s (its handler's timeout_seconds)")
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure, even sys.exit() in a handler, is recorded and retried
        return Ended(_describe(exc))
    finally:
        elapsed = clock() - began
        if elapsed > SLOW_JOB_SECONDS:
            logs.warning("slow_job", job_id=job.id, type=job.type, seconds=round(elapsed, 1))
    return Ended()


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
