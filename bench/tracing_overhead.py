"""The drain with OpenTelemetry tracing on (the SDK, an in-memory exporter) against off, on the same 5,000 no-op jobs.

    python -m bench.tracing_overhead [--jobs 5000] [--rounds 3]

Each round drains a fresh copy, untraced, then traced (opentelemetry.trace put in sys.modules, as an app that traces
has it). Uses CRONTICK_BENCH_DATABASE_URL (else CRONTICK_TEST_DATABASE_URL). Prints the medians and the ratio, then
what one job's span costs in-process, without a database (the floor of the difference): crontick's whole path for
it (start, made current, its trace id, ended with the outcome) against the SDK's own start and end of a bare span,
in microseconds, beside a no-op job's share of the untraced drain.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from typing import Any

import psycopg

import crontick
from bench.admin_scale import database
from crontick import enqueue_many, tracing
from crontick.runtime import Runtime
from crontick.settings import Settings


@crontick.handler("bench.trace_noop")
async def noop(payload: Any, job: crontick.Job) -> None:
    return None


def drained_seconds(url: str, jobs: int) -> float:
    with psycopg.connect(url, autocommit=True) as conn:
        enqueue_many(conn, [("bench.trace_noop", {"n": n}) for n in range(jobs)])

    async def go() -> float:
        runtime = Runtime(Settings(database_url=url, cron_secret="b" * 40, batch_size=500))
        try:
            t0 = time.perf_counter()
            result = await runtime.run(source="bench", drain=True)
            assert result.jobs.succeeded == jobs, result
            return time.perf_counter() - t0
        finally:
            await runtime.close()

    return asyncio.run(go())


def span_microseconds(provider: Any, repeat: int = 20_000) -> tuple[float, float]:
    """(crontick's path for one job's span, the SDK's bare span), each the best of 5 runs, in µs."""
    import timeit

    from crontick.jobs import job_spans
    from crontick.jobs.job import Job

    job = Job(1, "bench.trace_noop", {}, 1, 4, None)  # type: ignore[arg-type]  # created_at is never read here
    spans = job_spans.BatchSpans({}, ())
    bare = provider.get_tracer("bench")

    def crontick_path() -> None:
        span = spans.start(job)
        token = tracing.activate(span)
        tracing.trace_id(span)
        tracing.deactivate(token)
        job_spans.end(span, "succeeded")

    def sdk_path() -> None:
        bare.start_span("bench").end()

    return tuple(min(timeit.repeat(f, number=repeat, repeat=5)) / repeat * 1e6 for f in (crontick_path, sdk_path))  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    server = os.environ.get("CRONTICK_BENCH_DATABASE_URL") or os.environ["CRONTICK_TEST_DATABASE_URL"]
    import opentelemetry.trace as trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    off, on = [], []
    for _ in range(args.rounds):
        sys.modules.pop("opentelemetry.trace")
        tracing._tracer = None
        with database(server) as url:
            off.append(drained_seconds(url, args.jobs))
        sys.modules["opentelemetry.trace"] = trace
        with database(server) as url:
            on.append(drained_seconds(url, args.jobs))
        exporter.clear()
    a, b = statistics.median(off), statistics.median(on)
    print(f"drain of {args.jobs:,} no-op jobs: tracing off {a * 1000:.0f} ms, on {b * 1000:.0f} ms ({b / a - 1:+.0%})")
    ours, sdk = span_microseconds(provider)
    exporter.clear()
    print(
        f"per job: {(b - a) / args.jobs * 1e6:.0f} µs more traced; a no-op job untraced {a / args.jobs * 1e6:.0f} µs; "
        f"its span in-process {ours:.1f} µs (the SDK's bare span {sdk:.1f} µs)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
