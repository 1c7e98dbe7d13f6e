"""OpenTelemetry spans on the host app's own tracer provider, only when the app uses OpenTelemetry (`crontick[otel]`).

crontick never imports OpenTelemetry itself: an app that traces has imported `opentelemetry.trace`
to set its tracer provider, and tracer() finds it in sys.modules. Otherwise every function here
returns None or does nothing, for the price of a dictionary look-up, and the cold start is unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

TRACER_NAME = "crontick"
# W3C trace context: version 00, a 32-hex trace id, a 16-hex span id, 2-hex flags (https://www.w3.org/TR/trace-context/).
TRACEPARENT_PARTS = (2, 32, 16, 2)
TRACEPARENT_CHARS = 55
_HEX = frozenset("0123456789abcdef-")
Attributes = Mapping[str, str | int | float | bool]

_tracer: Any = None


class Api(NamedTuple):
    """The parts of OpenTelemetry's API a job's span needs, looked up once: a `from ... import` per job and step
    cost about a microsecond each (bench/tracing_overhead.py)."""

    consumer: Any
    internal: Any
    set_span_in_context: Callable[[Any], Any]
    attach: Callable[[Any], Any]
    detach: Callable[[Any], None]
    link: Callable[..., Any]  # opentelemetry.trace.Link, SpanContext and TraceFlags: a job's link to its enqueuer
    span_context: Callable[..., Any]
    trace_flags: Callable[[int], Any]


_api: Api | None = None


def otel() -> Api:
    """OpenTelemetry's API, imported on the first call (only ever made while the app traces)."""
    global _api
    if _api is None:
        from opentelemetry import context, trace

        _api = Api(
            trace.SpanKind.CONSUMER, trace.SpanKind.INTERNAL, trace.set_span_in_context, context.attach, context.detach,
            trace.Link, trace.SpanContext, trace.TraceFlags,
        )  # fmt: skip
    return _api


def tracer() -> Any | None:
    """The app's tracer for crontick's spans, or None when the app has not imported OpenTelemetry or has set
    no tracer provider (OpenTelemetry imported by some library, nothing recording): then nothing is traced
    and a tick sends no statement for its spans (tests/perf counts them)."""
    global _tracer
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    if _tracer is None:
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None
        _tracer = provider.get_tracer(TRACER_NAME)
    return _tracer


@contextmanager
def span(name: str, attributes: Attributes | None = None, *, links: list[Any] | None = None) -> Iterator[Any | None]:
    """A span made current for the block (a child of the current one), or None without OpenTelemetry.

    An exception leaving the block is recorded on it and marks it an error; crontick's own
    BaseExceptions (a job parked by job.sleep, a task cancelled) are not errors.
    """
    found = tracer()
    if found is None:
        yield None
        return
    from opentelemetry.trace import Status, StatusCode

    with found.start_as_current_span(
        name, attributes=attributes, links=links, record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except Exception as exc:
            current.record_exception(exc)
            current.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise


def start(
    name: str, attributes: Attributes | None = None, *, links: list[Any] | None = None, consumer: bool = False
) -> Any | None:
    """A span started as a child of the current one but not made current (activate() does that), or None.

    `consumer`: the span processes a message another span sent (a job run, SpanKind.CONSUMER).
    """
    found = tracer()
    if found is None:
        return None
    api = _api or otel()
    return found.start_span(name, kind=api.consumer if consumer else api.internal, attributes=attributes, links=links)


def activate(current: Any) -> Any:
    """Make `current` the current span in this context; returns the token for deactivate()."""
    api = _api or otel()
    return api.attach(api.set_span_in_context(current))


def deactivate(token: Any) -> None:
    (_api or otel()).detach(token)


def failed(current: Any, error: str, traceback: str | None) -> None:
    """Mark `current` an error, with the error's text (scrubbed by the caller) as an `exception` event."""
    from opentelemetry.trace import Status, StatusCode

    event = {"exception.type": error.split(":", 1)[0], "exception.message": error}
    if traceback:
        event["exception.stacktrace"] = traceback
    current.add_event("exception", event)
    current.set_status(Status(StatusCode.ERROR, error))


def trace_id(current: Any | None) -> str | None:
    """The 32-hex trace id of `current`, as the logs carry it; None for no span or an invalid one."""
    if current is None:
        return None
    context = current.get_span_context()
    return f"{context.trace_id:032x}" if context.is_valid else None


def traceparent() -> str | None:
    """The W3C traceparent of the current span, to keep with a job enqueued now; None without a valid one."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def well_formed(text: object) -> bool:
    """Whether `text` is a W3C traceparent crontick keeps: version 00, lower-case hex, a trace id and a span id that
    are not all zeros (https://www.w3.org/TR/trace-context/#traceparent-header). sql/functions/job_insert_many.sql
    keeps the same ones; anything else is ignored, as the spec asks of a receiver."""
    if not isinstance(text, str) or len(text) != TRACEPARENT_CHARS or not set(text) <= _HEX:
        return False
    parts = text.split("-")
    return (
        [len(p) for p in parts] == list(TRACEPARENT_PARTS)
        and parts[0] == "00"
        and parts[1] != "0" * 32
        and parts[2] != "0" * 16
    )


def _remote(text: str) -> Any:
    """The SpanContext a well-formed traceparent names, as a remote one."""
    api = _api or otel()
    _version, trace_hex, span_hex, flags = text.split("-")
    return api.span_context(
        int(trace_hex, 16), int(span_hex, 16), is_remote=True, trace_flags=api.trace_flags(int(flags, 16))
    )


def link(text: str | None) -> Any | None:
    """A Link to the span a traceparent names (a job's enqueuer), or None for none or a malformed one."""
    if not well_formed(text) or sys.modules.get("opentelemetry.trace") is None:
        return None
    assert text is not None
    return (_api or otel()).link(_remote(text), _ENQUEUED_BY)


_ENQUEUED_BY = {"crontick.link": "enqueued_by"}


@contextmanager
def inbound(header: str | None) -> Iterator[None]:
    """A request's `traceparent` header made the current trace context for the block, so that the jobs it enqueues
    keep the sender's span: only while the app traces, only a well-formed header (a sender's header is outside
    text: one that is not is ignored), and only when no span is current (an instrumented app's request span is
    already a child of the header, and the better parent)."""
    if tracer() is None or not well_formed(header) or traceparent() is not None:
        yield
        return
    from opentelemetry import context, trace

    assert header is not None
    token = context.attach(trace.set_span_in_context(trace.NonRecordingSpan(_remote(header))))
    try:
        yield
    finally:
        context.detach(token)
