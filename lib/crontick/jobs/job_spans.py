"""A job run's span and its steps' (crontick.tracing), only while the app traces: linked to the span that enqueued the job."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from crontick import tracing
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


class TracedJob(RunningJob, Protocol):
    """What a job's span is made of (crontick.Job has these): its enqueuer's traceparent besides the log's fields."""

    @property
    def traceparent(self) -> str | None: ...


class BatchSpans:
    """A traced batch's job spans, on the app's `tracer`, with the secrets scrubbed from errors.

    What every job's span needs is looked up once for the batch (the tracer, OpenTelemetry's SpanKind and context
    functions), and each job's enqueuer comes with the claimed Job (its traceparent): per job, only the span itself.
    """

    def __init__(self, tracer: Any, secrets: tuple[str, ...]) -> None:
        api = tracing.otel()
        self.tracer, self.secrets = tracer, secrets
        self._consumer, self._in_context, self._attach, self._detach = (
            api.consumer, api.set_span_in_context, api.attach, api.detach
        )  # fmt: skip
        # The last trace id and its hex: a batch's job spans are children of the tick's, all of one trace.
        self._trace_hex: tuple[int, str] = (0, "")

    def start(self, job: TracedJob) -> Any:
        """The span of one run of `job`, a child of the current one (the tick's), linked to its enqueuer's span (every
        attempt's is), not made current."""
        link = tracing.link(job.traceparent) if job.traceparent is not None else None
        attributes = {
            "crontick.job.id": job.id,
            "crontick.job.type": job.type,
            "crontick.job.attempt": job.attempt,
            "messaging.system": "crontick",
            "messaging.operation.type": "process",
        }
        return self.tracer.start_span(
            f"crontick job {job.type}",
            kind=self._consumer,
            attributes=attributes,
            links=None if link is None else (link,),
        )

    def trace_id(self, span: Any) -> str | None:
        """tracing.trace_id(span), formatted once per trace rather than once per job (one tuple: threads read it)."""
        context = span.get_span_context()
        if not context.is_valid:
            return None
        known = self._trace_hex
        if known[0] != context.trace_id:
            known = self._trace_hex = (context.trace_id, f"{context.trace_id:032x}")
        return known[1]

    async def run(self, job: TracedJob, attempt: Callable[[str | None], Awaitable[E]]) -> E:
        """`attempt(trace_id)` inside the job's span, current while it runs; one the budget stops ends `stopped`."""
        span = self.start(job)
        token = self._attach(self._in_context(span))
        try:
            ended = await attempt(self.trace_id(span))
        except BaseException:
            end(span, "stopped", "TimeoutError: stopped by the tick's time budget")
            raise
        finally:
            self._detach(token)
        self.end(span, ended)
        return ended

    def run_in(self, job: TracedJob, context: contextvars.Context, attempt: Callable[[str | None], E]) -> E:
        """run() for a sync handler in a worker thread: the span is made current in `context`, where it runs."""
        span = self.start(job)
        context.run(self._attach, self._in_context(span))
        ended = attempt(self.trace_id(span))
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
