"""A CRONTICK_HANDLERS module for subprocess tests: each run of a job adds one row to side_effects."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import crontick
from tests.support.process_connection import ProcessConnection

SIDE_EFFECTS_TABLE_SQL = "create table side_effects (job_id bigint not null, pid int not null)"

_connection = ProcessConnection()


@crontick.handler("t_sidefx.record")
async def record(payload: Any, job: crontick.Job) -> None:
    """Deliberately not idempotent, so a job that ran twice shows up as two rows."""
    await _record_run(job)


async def _record_run(job: crontick.Job) -> None:
    conn = await _connection.get()
    await conn.execute(
        "insert into side_effects (job_id, pid) values (%(job_id)s, %(pid)s)", {"job_id": job.id, "pid": os.getpid()}
    )


@crontick.handler("t_sidefx.hang_once")
async def hang_once(payload: Any, job: crontick.Job) -> None:
    """Records its run, then hangs on the first attempt: the test kills the tick while it waits."""
    await _record_run(job)
    if job.attempt == 1:
        await asyncio.sleep(3600)


@crontick.handler("t_sidefx.slow")
async def slow(payload: Any, job: crontick.Job) -> None:
    """Records its run, then works for `seconds`: a tick running it holds its lease meanwhile."""
    await _record_run(job)
    await asyncio.sleep(float(payload["seconds"]))
