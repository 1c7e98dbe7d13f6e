"""Runs a claimed batch of jobs concurrently, within the tick's deadline, and decides each outcome."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from . import backoff, handlers
from .errors import PermanentError
from .handlers import Handler, Job
from .queue import Outcome

log = logging.getLogger("crontick")

SLOW_JOB_SECONDS = 8.0
LAST_ERROR_MAX_CHARS = 2000


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
    """Run each job at most `concurrency` at a time and return one Outcome per job.

    A job not yet started when the deadline passes is released (pending again, its attempt
    not counted). A running handler is cancelled at the deadline and counts as a failure.
    """
    started_at = clock()
    gate = asyncio.Semaphore(concurrency)

    async def run_one(job: Job) -> Outcome:
        async with gate:
            remaining = deadline - clock()
            if remaining <= 0:
                return Outcome(job.id, job.attempt, "pending", job.attempt - 1)
            error, permanent = await _attempt(job, remaining, clock)
        if error is None:
            return Outcome(job.id, job.attempt, "done", job.attempt)
        finished = now + timedelta(seconds=clock() - started_at)
        entry = handlers.get(job.type)
        policy = entry.retry if entry else backoff.DEFAULT_POLICY
        decision = backoff.after_failure(job.attempt, job.max_attempts, policy, finished, rand(), permanent)
        text = _scrub(error, secrets)
        if isinstance(decision, backoff.Retry):
            return Outcome(job.id, job.attempt, "pending", job.attempt, decision.run_after, text)
        return Outcome(job.id, job.attempt, "failed", job.attempt, None, text)

    if len(jobs) == 1:
        return [await run_one(jobs[0])]
    return list(await asyncio.gather(*(run_one(job) for job in jobs)))


async def _attempt(job: Job, remaining: float, clock: Callable[[], float]) -> tuple[str | None, bool]:
    """Run one handler; returns (error text or None, permanent?)."""
    entry = handlers.get(job.type)
    if entry is None:
        return _unknown_type(job), True
    timeout = remaining if entry.timeout_seconds is None else min(remaining, entry.timeout_seconds)
    began = clock()
    try:
        await asyncio.wait_for(_call(entry, job), timeout)
    except PermanentError as exc:
        return _describe(exc), True
    except TimeoutError:
        return f"TimeoutError: job {job.id} ({job.type}) was stopped after {timeout:.1f} s (the tick's time budget or the handler's timeout)", False
    except Exception as exc:  # a handler's failure of any kind is recorded and retried, never lost
        return _describe(exc), False
    finally:
        elapsed = clock() - began
        if elapsed > SLOW_JOB_SECONDS:
            log.warning('{"event": "slow_job", "job_id": %d, "type": "%s", "seconds": %.1f}', job.id, job.type, elapsed)
    return None, False


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


def _scrub(text: str, secrets: Sequence[str]) -> str:
    """Remove every configured secret from error text before it is stored, and cap its length."""
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    if len(text) > LAST_ERROR_MAX_CHARS:
        text = text[: LAST_ERROR_MAX_CHARS - 1] + "…"
    return text
