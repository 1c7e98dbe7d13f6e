"""Every enqueue keeps the enqueuer's trace context (issue 37): crontick.enqueue (sync, async, debounced), enqueue_many
(with and without keys) and the SQL API's `traceparent` argument, in the insert itself; a malformed one is not kept,
and the job's span links to what was kept (the SDK's in-memory exporter reads the spans back)."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

import crontick
from crontick import tracing
from tests.support.core_jobs import settings_for, tick

VALID = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
MALFORMED = [
    "",
    "garbage",
    VALID.upper(),  # the spec's hex is lower-case
    "ff" + VALID[2:],  # version ff is invalid, and crontick keeps version 00 only
    "00-00000000000000000000000000000000-b7ad6b7169203331-01",  # an all-zero trace id
    "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  # an all-zero span id
    VALID + "-extra",
    VALID[:-1],
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g",
    "00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01",
]


@crontick.handler("t_tp.noop")
def noop(payload: Any, job: crontick.Job) -> None:
    return None


def _kept(conn: psycopg.Connection[Any], ids: list[int]) -> list[str | None]:
    rows = dict(conn.execute("select id, traceparent from crontick.jobs where id = any(%(ids)s)", {"ids": ids}))
    return [rows[i] for i in ids]


def _context(span: Any) -> str:
    context = span.get_span_context()
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def test_every_python_enqueue_keeps_the_callers_span(
    conn: psycopg.Connection[Any], database_url: str, spans: Any
) -> None:
    from opentelemetry import trace

    async def enqueue_async() -> int:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
            return int(await crontick.enqueue(aconn, "t_tp.noop", {"n": "async"}))

    with trace.get_tracer("app").start_as_current_span("POST /orders") as request:
        ids = [crontick.enqueue(conn, "t_tp.noop", {"n": 1})]
        ids.append(crontick.enqueue(conn, "t_tp.noop", {"n": 2}, key="tp-key"))
        ids.append(asyncio.run(enqueue_async()))
        ids.append(crontick.enqueue(conn, "t_tp.noop", {"n": 3}, debounce=crontick.Debounce("tp", 60)))
        ids += crontick.enqueue_many(conn, [("t_tp.noop", {"n": 4}), ("t_tp.noop", {"n": 5})])
        ids += crontick.enqueue_many(conn, [("t_tp.noop", {"n": 6}, "tp-many"), ("t_tp.noop", {"n": 7})])
    outside = crontick.enqueue(conn, "t_tp.noop", {"n": 8})  # no span is current: nothing to keep
    assert _kept(conn, ids) == [_context(request)] * 8
    assert _kept(conn, [outside]) == [None]


def test_a_debounced_job_keeps_its_first_enqueuers_trace(conn: psycopg.Connection[Any], spans: Any) -> None:
    from opentelemetry import trace

    tracer = trace.get_tracer("app")
    with tracer.start_as_current_span("first message") as first:
        job_id = crontick.enqueue(conn, "t_tp.noop", {"n": 1}, debounce=crontick.Debounce("burst", 60))
    with tracer.start_as_current_span("second message"):
        again = crontick.enqueue(conn, "t_tp.noop", {"n": 2}, debounce=crontick.Debounce("burst", 60))
    assert again == job_id and _kept(conn, [job_id]) == [_context(first)]


@pytest.mark.parametrize("text", [VALID, *MALFORMED])
def test_the_sql_api_keeps_a_well_formed_traceparent_and_ignores_any_other(
    conn: psycopg.Connection[Any], text: str
) -> None:
    """Another driver's app passes its span's traceparent; one that is not a valid W3C traceparent is ignored, as the
    spec asks of a receiver (the job is enqueued all the same), and Python's check agrees with the database's."""
    row = conn.execute("select crontick.enqueue('t_tp.noop', '{}', traceparent => %(t)s)", {"t": text}).fetchone()
    assert row is not None
    assert _kept(conn, [row[0]]) == [text if tracing.well_formed(text) else None]
    assert tracing.well_formed(text) is (text == VALID)


def test_a_job_enqueued_through_sql_with_a_traceparent_links_its_span_to_it(
    conn: psycopg.Connection[Any], database_url: str, spans: Any
) -> None:
    conn.execute("select crontick.enqueue('t_tp.noop', '{}', traceparent => %(t)s)", {"t": VALID})
    assert tick(database_url, settings_for(database_url)).jobs.succeeded == 1
    [job] = [s for s in spans.get_finished_spans() if s.name == "crontick job t_tp.noop"]
    [link] = job.links
    assert f"{link.context.trace_id:032x}" == VALID.split("-")[1]
    assert f"{link.context.span_id:016x}" == VALID.split("-")[2]
