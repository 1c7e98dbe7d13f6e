"""job.spawn while the app traces: each child keeps the parent's span as its enqueuer, so the child's span links to
the parent's run; a job.join is a span of the parent's (the SDK's in-memory exporter)."""

from __future__ import annotations

from typing import Any

import psycopg

import crontick
from tests.support.core_jobs import settings_for, tick


@crontick.handler("t_spawntrace.parent")
async def parent(payload: Any, job: crontick.Job) -> None:
    ids = await job.spawn("kids", "t_spawntrace.child", [{"n": 1}, {"n": 2}])
    await job.join("all", ids, timeout_seconds=60)


@crontick.handler("t_spawntrace.child")
def child(payload: Any, job: crontick.Job) -> None:
    return None


def test_spawned_children_link_to_the_parents_span_and_a_join_is_a_span(
    conn: psycopg.Connection[Any], database_url: str, spans: Any
) -> None:
    crontick.enqueue(conn, "t_spawntrace.parent", {})
    settings = settings_for(database_url)
    for _ in range(3):  # the parent spawns and parks; the children run; the parent's join returns
        tick(database_url, settings)
    finished = spans.get_finished_spans()
    parents = [s for s in finished if s.name == "crontick job t_spawntrace.parent"]
    children = [s for s in finished if s.name == "crontick job t_spawntrace.child"]
    assert len(children) == 2 and len(parents) >= 2
    for run in children:
        [link] = run.links
        assert (link.context.trace_id, link.context.span_id) == (
            parents[0].context.trace_id,
            parents[0].context.span_id,
        )
    joins = [s for s in finished if s.name == "crontick join all"]
    assert joins and {s.parent.span_id for s in joins} <= {p.context.span_id for p in parents}
    assert joins[0].attributes.get("crontick.step.parked") is True
    rows = conn.execute("select status from crontick.jobs order by id").fetchall()
    assert rows == [("done",), ("done",), ("done",)]
