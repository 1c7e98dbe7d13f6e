"""The OpenTelemetry SDK's in-memory exporter on the global tracer provider, for the tests that read crontick's spans
back (tests/conftest.py's `otel_exporter` and `spans` fixtures)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from crontick import tracing

_provider: Any = None
_trace_module: Any = None


@contextmanager
def traced() -> Iterator[Any]:
    """The in-memory exporter on the global tracer provider, set once per process (OpenTelemetry allows one).

    Afterwards `opentelemetry.trace` leaves sys.modules again, so what runs after runs as in an app that does not
    trace (crontick looks for it there); the next `traced()` puts the same one back.
    """
    global _provider, _trace_module
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if _trace_module is not None:
        # Both places an import looks: sys.modules, and the package's attribute, which `from opentelemetry import
        # trace` reads first. Code that imported opentelemetry.trace while it was out of sys.modules made a second
        # module (with no provider set) and left it on the package: the tests' spans were then non-recording.
        sys.modules["opentelemetry.trace"] = _trace_module
        sys.modules["opentelemetry"].trace = _trace_module  # type: ignore[attr-defined]
    import opentelemetry.trace as trace

    if _provider is None:
        _provider = TracerProvider()
        _provider.exporter = InMemorySpanExporter()
        _provider.add_span_processor(SimpleSpanProcessor(_provider.exporter))
        trace.set_tracer_provider(_provider)
        _trace_module = trace
    try:
        yield _provider.exporter
    finally:
        sys.modules.pop("opentelemetry.trace", None)
        tracing._tracer = None


@contextmanager
def untraced() -> Iterator[None]:
    """Inside traced(): the block runs as in an app that does not trace (no opentelemetry.trace in sys.modules), then
    tracing is back as it was."""
    trace = sys.modules.pop("opentelemetry.trace", None)
    tracing._tracer = None
    try:
        yield
    finally:
        if trace is not None:
            sys.modules["opentelemetry.trace"] = trace
        tracing._tracer = None
