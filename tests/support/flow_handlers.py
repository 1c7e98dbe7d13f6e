"""A CRONTICK_HANDLERS module for flow control's subprocess tests: each run of a job is a row of flow_runs
(its start and end by the database's clock), so a test can tell overlaps, order and starts per window."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import crontick
from tests.support.process_connection import ProcessConnection

FLOW_RUNS_TABLE_SQL = """
create table flow_runs (
    id bigserial primary key, job_id bigint not null, grp text, attempt int not null, pid int not null,
    started_at timestamptz not null, finished_at timestamptz
)
"""
LIMIT_NAME = "t_flow.provider"
LIMIT_COUNT = 5
LIMIT_SECONDS = 1.0

_connection = ProcessConnection()

crontick.rate_limit(LIMIT_NAME, LIMIT_COUNT, per_seconds=LIMIT_SECONDS)


async def _run(payload: Any, job: crontick.Job, seconds: float) -> None:
    conn = await _connection.get()
    cur = await conn.execute(
        "insert into flow_runs (job_id, grp, attempt, pid, started_at)"
        " values (%(job)s, %(grp)s, %(attempt)s, %(pid)s, clock_timestamp()) returning id",
        {"job": job.id, "grp": payload.get("group"), "attempt": job.attempt, "pid": os.getpid()},
    )
    row = await cur.fetchone()
    assert row is not None
    await asyncio.sleep(seconds)
    await conn.execute("update flow_runs set finished_at = clock_timestamp() where id = %(id)s", {"id": row[0]})


@crontick.handler("t_flow.step", retry=crontick.Retry((0.2,), jitter_fraction=0.0))
async def step(payload: Any, job: crontick.Job) -> None:
    """Works a little (so overlaps would show); fails its first attempt when asked (a retry in the group),
    hangs on it when asked (the test kills the tick)."""
    await _run(payload, job, float(payload.get("seconds", 0.01)))
    if job.attempt == 1 and payload.get("fail_first"):
        raise ConnectionError("provider down")
    if job.attempt == 1 and payload.get("hang_first"):
        await asyncio.sleep(3600)


@crontick.handler("t_flow.limited", rate_limit=LIMIT_NAME)
async def limited(payload: Any, job: crontick.Job) -> None:
    """Counts against LIMIT_NAME: each start is a row."""
    await _run(payload, job, 0.0)


@crontick.handler("t_flow.wide", group_concurrency=3)
async def wide(payload: Any, job: crontick.Job) -> None:
    """Up to three of a group at once."""
    await _run(payload, job, float(payload.get("seconds", 0.05)))
