"""A job run's span and its steps' (crontick.tracing), only while the app traces: linked to the span that enqueued the job."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

import psycopg

from crontick import tracing
from crontick.db import query
from crontick.logs import RunningJob
from crontick.text import TRACEBACK_MAX_CHARS, scrub
from crontick.workflows.steps import Parked


class RunEnd(Protocol):
    """How a handler call ended, as crontick.jobs.decision.Ended says it."""

    @property
    def error(self) -> str | None: ...
    @property
    def traceback(self) -> str | None: ...
    @property
    def snooze_seconds(self) -> float | None: ...
    @property
    def unknown_type(self) -> bool: ...
    @property
    def parked(self) -> Parked | None: ...


E = TypeVar("E", bound=RunEnd)


class BatchSpans:
    """A traced batch's job spans: each job's enqueuer (read once for the batch), and the secrets scrubbed from errors."""

    def __init__(self, enqueuers: dict[int, str], secrets: tuple[str, ...]) -> None:
        self.enqueuers, self.secrets = enqueuers, secrets

    @classmethod
    async def of(
        cls, jobs: Sequence[RunningJob], conn: psycopg.AsyncConnection[Any] | None, secrets: tuple[str, ...]
    ) -> BatchSpans:
        """The traceparent each job was enqueued with (migration 0031), in one statement on the tick's `conn`."""
        if conn is None:
            return cls({}, secrets)
        cur = await conn.execute(query("job_traceparents"), {"ids": [job.id for job in jobs]})
        return cls({job_id: text for job_id, text in await cur.fetchall()}, secrets)

    def start(self, job: RunningJob) -> Any:
        return start(job, self.enqueuers.get(job.id))

    async def run(self, job: RunningJob, attempt: Callable[[str | None], Awaitable[E]]) -> E:
        """`attempt(trace_id)` inside the job's span, current while it runs; one the budget stops ends `stopped`."""
        span = self.start(job)
        token = tracing.activate(span)
        try:
            ended = await attempt(tracing.trace_id(span))
        except BaseException:
            end(span, "stopped", "TimeoutError: stopped by the tick's time budget")
            raise
        finally:
            tracing.deactivate(token)
        self.end(span, ended)
        return ended

    def run_in(self, job: RunningJob, context: contextvars.Context, attempt: Callable[[str | None], E]) -> E:
        """run() for a sync handler in a worker thread: the span is made current in `context`, where it runs."""
        span = self.start(job)
        context.run(tracing.activate, span)
        ended = attempt(tracing.trace_id(span))
        self.end(span, ended)
        return ended

    def end(self, span: Any, ended: RunEnd) -> None:
        if ended.parked is not None:
            end(span, "parked")
        elif ended.snooze_seconds is not None:
            end(span, "snoozed")
        elif ended.error is None:
            end(span, "succeeded")
        else:
            trace = ended.traceback and scrub(ended.traceback, self.secrets, max_chars=TRACEBACK_MAX_CHARS)
            end(span, "unknown_type" if ended.unknown_type else "failed", scrub(ended.error, self.secrets), trace)


def start(job: RunningJob, traceparent: str | None) -> Any:
    """The span of one run of `job`, a child of the tick's, linked to its enqueuer's span (every attempt's is)."""
    link = tracing.link(traceparent)
    attributes: tracing.Attributes = {
        "crontick.job.id": job.id,
        "crontick.job.type": job.type,
        "crontick.job.attempt": job.attempt,
        "messaging.system": "crontick",
        "messaging.operation.type": "process",
    }
    return tracing.start(f"crontick job {job.type}", attributes, links=[link] if link else None, consumer=True)


def end(span: Any, outcome: str, error: str | None = None, traceback: str | None = None) -> None:
    """End a job's span with how the run ended: succeeded, failed, snoozed, parked, unknown_type or stopped."""
    span.set_attribute("crontick.job.outcome", outcome)
    if error is not None:
        tracing.failed(span, error, traceback)
    span.end()


def around_step(kind: str, job: RunningJob, name: str, call: Callable[[], Any]) -> Any:
    """`call()` (job.step, job.sleep, job.wait_for, job.join, or one item of job.map, named `name[i]`) inside a span of
    its own, a child of the current one (the job's); awaited inside it when it returns an awaitable."""
    span = tracing.start(
        f"crontick {kind} {name}", {"crontick.step.name": name, "crontick.step.kind": kind, "crontick.job.id": job.id}
    )
    if span is None:  # OpenTelemetry went away meanwhile
        return call()
    token = tracing.activate(span)
    try:
        result = call()
    except BaseException as exc:
        _ended(span, exc)
        raise
    finally:
        tracing.deactivate(token)
    import inspect  # only while tracing: not on a cold start

    if inspect.isawaitable(result):
        return _awaited(span, result)
    span.end()
    return result


async def _awaited(span: Any, awaitable: Awaitable[Any]) -> Any:
    token = tracing.activate(span)
    try:
        result = await awaitable
    except BaseException as exc:
        _ended(span, exc)
        raise
    finally:
        tracing.deactivate(token)
    span.end()
    return result


def _ended(span: Any, exc: BaseException) -> None:
    """A step's span ended by an exception: a sleep or a wait parks the job (not an error); anything else is one."""
    if isinstance(exc, Parked):
        span.set_attribute("crontick.step.parked", True)
    elif isinstance(exc, Exception):
        span.record_exception(exc)
        tracing.failed(span, f"{type(exc).__name__}: {exc}", None)
    span.end()
