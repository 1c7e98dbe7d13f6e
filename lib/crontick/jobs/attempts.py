"""One handler's attempt and how it ended: called, bounded by its own timeout_seconds, its exception read as a
snooze, a park, a deferral, a permanent or a retryable failure (crontick.jobs.runner runs a batch of them)."""

from __future__ import annotations

import asyncio
import contextvars
from functools import partial
from typing import TYPE_CHECKING

from crontick import logs, retry
from crontick.errors import PermanentError, RetryableError, Snooze
from crontick.jobs import registry
from crontick.jobs.decision import SUCCEEDED, Ended
from crontick.jobs.job import Job, UndecodablePayload
from crontick.jobs.registry import Handler
from crontick.text import describe, traceback_of
from crontick.workflows import children
from crontick.workflows.budget import Deferred
from crontick.workflows.parked import Parked

if TYPE_CHECKING:
    from crontick.jobs.job_spans import BatchSpans


async def attempt(job: Job, trace_id: str | None = None) -> Ended:
    """Run one handler and say how it ended. `trace_id`: its span's (job_spans.BatchSpans.run), for its log lines."""
    entry = registry.get(job.type)
    if entry is None:
        return Ended(_unknown_type(job), True, unknown_type=True)
    if isinstance(job.payload, UndecodablePayload):
        return Ended(f"PermanentError: job {job.id} ({job.type}): {job.payload.reason}", True)
    limit = None if entry.timeout_seconds is None else asyncio.timeout(entry.timeout_seconds)
    running = logs.running(job, trace_id)  # every line logged until the handler ends names the job
    try:
        # Only async handlers come here: sync ones run in the batch's threads (crontick.jobs.runner._Batch.worker).
        if limit is None:  # the tick's budget, held by the worker, still bounds it
            value = await entry.func(job.payload, job)  # type: ignore[misc]
        else:
            async with limit:
                value = await entry.func(job.payload, job)  # type: ignore[misc]
        if value is not None:  # the job's result, which job.join returns (crontick.workflows.children)
            await children.keep_result(job, value)
    except TimeoutError as exc:
        if limit is None or not limit.expired():  # the handler's own timeout (a socket's, say)
            return Ended(_describe(exc))
        return Ended(
            f"TimeoutError: job {job.id} ({job.type}) was stopped after {entry.timeout_seconds:.1f} s (its handler's timeout_seconds)"
        )
    except (Exception, SystemExit, Parked, Deferred) as exc:  # noqa: BLE001 - any failure, even sys.exit() in a handler, is recorded and retried
        return _ended(exc)
    finally:
        logs.done(running)
    return SUCCEEDED


def attempt_in_thread(job: Job, spans: BatchSpans | None = None) -> Ended:
    """attempt() for a sync handler in a crontick.jobs.runner._ThreadRun (which only takes jobs whose handler exists)."""
    entry = registry.get(job.type)
    assert entry is not None
    # Each job in its own copy of the context, as a hop per job would give it, naming the job to its log lines.
    context = contextvars.copy_context()
    if spans is not None:  # the job's span, current in that context: its steps' spans are its children
        return spans.run_in(job, context, partial(_run_in_context, job, entry, context))
    return _run_in_context(job, entry, context, None)


def _run_in_context(job: Job, entry: Handler, context: contextvars.Context, trace_id: str | None) -> Ended:
    if isinstance(job.payload, UndecodablePayload):  # as in attempt(): the handler is not called
        return Ended(f"PermanentError: job {job.id} ({job.type}): {job.payload.reason}", True)
    context.run(logs.running, job, trace_id)
    try:
        value = context.run(entry.func, job.payload, job)
        if value is not None:  # as in attempt()
            context.run(children.keep_result, job, value)
    except (Exception, SystemExit, Parked, Deferred) as exc:  # noqa: BLE001 - as in _attempt
        return _ended(exc)
    return SUCCEEDED


def _ended(exc: BaseException) -> Ended:
    """How a handler that raised `exc` ended: a snooze, a permanent or a retryable failure."""
    if isinstance(exc, Snooze):
        return Ended(snooze_seconds=exc.seconds)
    if isinstance(exc, Parked):
        return Ended(parked=exc)
    if isinstance(exc, Deferred):  # a step that does not fit what is left of the budget
        return Ended(str(exc), new_steps=exc.new_steps, deferred=True, started_late=exc.started_late)
    trace = traceback_of(exc)
    if isinstance(exc, PermanentError):
        return Ended(_describe(exc), True, traceback=trace)
    if isinstance(exc, RetryableError):  # a provider's 429 or 503 may say how long to wait
        return Ended(_describe(exc), retry_after_seconds=exc.retry_after_seconds, traceback=trace)
    # An exception carrying a provider's 429 or 503 (httpx, the OpenAI and Anthropic SDKs): with a
    # Retry-After, crontick.jobs.decision snoozes the job for it; without one it is an ordinary failure.
    return Ended(_describe(exc), traceback=trace, throttle=retry.throttle_of(exc))


def _unknown_type(job: Job) -> str:
    modules = ", ".join(registry.loaded_modules()) or "none (set CRONTICK_HANDLERS)"
    known = ", ".join(registry.registered_types())
    return (
        f"UnknownJobType: job {job.id} has type {job.type!r}, which no handler is registered for "
        f"(handler modules loaded: {modules}; registered types: {known})"
    )


def _describe(exc: BaseException) -> str:
    return describe(exc)  # a handler's exception may be odd (a __str__ that raises): its job is still recorded
