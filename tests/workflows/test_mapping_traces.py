"""job.map while the app traces: each item's step is a span of its own (`crontick map name[i]`), a child of the job's
span, in an async handler and in a sync one's threads; a job.join is a span too (the SDK's in-memory exporter)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

import crontick
from tests.support.core_jobs import settings_for, tick


@crontick.handler("t_maptrace.async")
async def mapped_async(payload: Any, job: crontick.Job) -> None:
    await job.map("each", lambda n: n * n, [1, 2, 3], concurrency=2)


@crontick.handler("t_maptrace.sync")
def mapped_sync(payload: Any, job: crontick.Job) -> None:
    job.map("each", lambda n: n * n, [1, 2, 3], concurrency=3)


@crontick.handler("t_maptrace.fails")
async def mapped_fails(payload: Any, job: crontick.Job) -> None:
    def boom(n: int) -> int:
        raise ValueError(f"item {n} broke")

    await job.map("each", boom, [7])


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_each_item_of_a_map_is_a_child_span_of_the_job(
    conn: psycopg.Connection[Any], database_url: str, spans: Any, kind: str
) -> None:
    crontick.enqueue(conn, f"t_maptrace.{kind}", {})
    assert tick(database_url, settings_for(database_url)).jobs.succeeded == 1
    finished = spans.get_finished_spans()
    [job] = [s for s in finished if s.name == f"crontick job t_maptrace.{kind}"]
    items = sorted((s for s in finished if s.name.startswith("crontick map ")), key=lambda s: s.name)
    assert [s.name for s in items] == ["crontick map each[0]", "crontick map each[1]", "crontick map each[2]"]
    assert {s.parent.span_id for s in items} == {job.context.span_id}
    assert [s.attributes["crontick.step.kind"] for s in items] == ["map"] * 3


def test_an_item_that_raises_is_an_error_span(conn: psycopg.Connection[Any], database_url: str, spans: Any) -> None:
    from opentelemetry import trace

    crontick.enqueue(conn, "t_maptrace.fails", {})
    assert tick(database_url, settings_for(database_url)).jobs.retried == 1
    [item] = [s for s in spans.get_finished_spans() if s.name == "crontick map each[0]"]
    assert item.status.status_code == trace.StatusCode.ERROR and "item 7 broke" in item.status.description
