"""OpenTelemetry traces on the app's own tracer provider (the SDK with an in-memory exporter): a span per tick, a
child per job run linked to the span that enqueued it, a child per step, sleep and wait, and the trace id in the
job's log lines (tests/tracing/test_tracing_off.py: without OpenTelemetry, crontick imports none of it)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import psycopg

import crontick
from crontick import logs, tracing
from crontick.runtime import Runtime
from crontick.tick.drain import drain
from tests.support import wire
from tests.support.core_jobs import settings_for
from tests.support.logs import LogLines
from tests.support.otel import untraced


@crontick.handler("t_trace.steps")
async def with_steps(payload: Any, job: crontick.Job) -> None:
    await job.step("fetch", lambda: {"n": 1})
    logs.warning("t_trace_note")
    await job.sleep("nap", 600)


@crontick.handler("t_trace.sync_steps")
def sync_steps(payload: Any, job: crontick.Job) -> None:
    job.step("fetch", lambda: 2)
    job.wait_for("reply", f"reply:{job.id}", timeout_seconds=60)


@crontick.handler("t_trace.fails")
def fails(payload: Any, job: crontick.Job) -> None:
    raise ValueError(f"no luck on attempt {job.attempt}")


@crontick.handler("t_trace.noop")
async def noop(payload: Any, job: crontick.Job) -> None:
    return None


def _tick(database_url: str) -> None:
    async def go() -> None:
        runtime = Runtime(settings_for(database_url))
        try:
            await runtime.run(source="test")
        finally:
            await runtime.close()

    asyncio.run(go())


def _by_name(finished: Any) -> dict[str, Any]:
    return {s.name: s for s in finished}


def test_a_job_span_is_a_child_of_the_tick_linked_to_its_enqueuer_with_a_child_per_step(
    database_url: str, conn: psycopg.Connection[Any], spans: Any, crontick_log: LogLines
) -> None:
    from opentelemetry import trace

    with trace.get_tracer("app").start_as_current_span("POST /orders") as request:
        job_id = crontick.enqueue(conn, "t_trace.steps", {})
    _tick(database_url)
    got = _by_name(spans.get_finished_spans())
    tick, job, step, nap = (
        got[n] for n in ("crontick tick", "crontick job t_trace.steps", "crontick step fetch", "crontick sleep nap")
    )
    assert job.parent.span_id == tick.context.span_id and job.context.trace_id == tick.context.trace_id
    assert job.kind == trace.SpanKind.CONSUMER
    assert [link.context.span_id for link in job.links] == [request.get_span_context().span_id]
    assert [link.context.trace_id for link in job.links] == [request.get_span_context().trace_id]
    assert {k: job.attributes[k] for k in ("crontick.job.id", "crontick.job.type", "crontick.job.attempt")} == {
        "crontick.job.id": job_id, "crontick.job.type": "t_trace.steps", "crontick.job.attempt": 1,
    }  # fmt: skip
    assert job.attributes["crontick.job.outcome"] == "parked"
    assert step.parent.span_id == job.context.span_id and nap.parent.span_id == job.context.span_id
    assert nap.attributes["crontick.step.parked"] is True
    assert tick.attributes["crontick.jobs.claimed"] == 1 and tick.attributes["crontick.tick.source"] == "test"
    note = next(json.loads(line) for line in crontick_log.lines if '"t_trace_note"' in line)
    assert note["trace_id"] == f"{job.context.trace_id:032x}" and note["job_id"] == job_id


def test_a_sync_handlers_steps_are_children_of_its_span_in_the_worker_thread(
    database_url: str, conn: psycopg.Connection[Any], spans: Any
) -> None:
    crontick.enqueue(conn, "t_trace.sync_steps", {})  # outside any span: no link
    _tick(database_url)
    got = _by_name(spans.get_finished_spans())
    job = got["crontick job t_trace.sync_steps"]
    assert got["crontick step fetch"].parent.span_id == job.context.span_id
    assert got["crontick wait reply"].parent.span_id == job.context.span_id
    assert list(job.links) == [] and job.attributes["crontick.job.outcome"] == "parked"


def test_a_failed_attempt_is_an_error_and_the_retry_a_new_trace_linked_to_the_same_enqueuer(
    database_url: str, conn: psycopg.Connection[Any], spans: Any
) -> None:
    from opentelemetry import trace

    with trace.get_tracer("app").start_as_current_span("POST /import") as request:
        job_id = crontick.enqueue(conn, "t_trace.fails", {})
    _tick(database_url)
    conn.execute("update jobs set run_after = now() where id = %(id)s", {"id": job_id})
    _tick(database_url)
    runs = [s for s in spans.get_finished_spans() if s.name == "crontick job t_trace.fails"]
    assert [s.attributes["crontick.job.attempt"] for s in runs] == [1, 2]
    assert runs[0].context.trace_id != runs[1].context.trace_id  # each tick is a trace of its own
    for run in runs:
        assert run.status.status_code == trace.StatusCode.ERROR
        assert run.attributes["crontick.job.outcome"] == "failed"
        assert [link.context.span_id for link in run.links] == [request.get_span_context().span_id]
        [event] = run.events
        assert event.name == "exception" and "no luck on attempt" in event.attributes["exception.message"]


def test_a_traced_drain_sends_the_statements_an_untraced_one_sends_and_links_each_job_to_its_enqueuer(
    database_url: str, conn: psycopg.Connection[Any], spans: Any
) -> None:
    """Each job's enqueuer comes with the claimed job (its traceparent, in the claim's answer): tracing adds no
    statement to a batch (the traceparents were once read with one statement more per batch)."""
    from opentelemetry import trace

    settings = settings_for(database_url, reminder_channel="console", batch_size=2)

    def drained() -> list[str]:
        result, statements = wire.traced(database_url, lambda aconn: drain(aconn, settings, source="test"))
        assert result.jobs.succeeded == 5
        return statements

    with untraced():
        assert tracing.tracer() is None
        crontick.enqueue_many(conn, [("t_trace.noop", {"n": n}) for n in range(5)])
        plain = drained()
    assert spans.get_finished_spans() == ()
    with trace.get_tracer("app").start_as_current_span("POST /orders") as request:
        linked = crontick.enqueue_many(conn, [("t_trace.noop", {"n": n}) for n in range(3)])
    unlinked = crontick.enqueue_many(conn, [("t_trace.noop", {"n": n}) for n in range(3, 5)])
    assert drained() == plain
    assert plain.count("job_record_and_claim") >= 1  # more than one batch: a statement per batch would show
    runs = {
        s.attributes["crontick.job.id"]: s for s in spans.get_finished_spans() if s.name == "crontick job t_trace.noop"
    }
    assert sorted(runs) == sorted(linked + unlinked)
    for job_id in linked:
        assert [link.context.span_id for link in runs[job_id].links] == [request.get_span_context().span_id]
        assert runs[job_id].links[0].attributes == {"crontick.link": "enqueued_by"}
    for job_id in unlinked:
        assert list(runs[job_id].links) == []
