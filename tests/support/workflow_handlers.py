"""A CRONTICK_HANDLERS module for the durable-steps tests that kill a tick: each call of a step's function adds a row to step_calls."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import crontick
from crontick import db
from tests.support.process_connection import ProcessConnection

STEP_CALLS_TABLE_SQL = "create table step_calls (job_id bigint not null, step text not null, pid int not null)"

_connection = ProcessConnection()


async def _called(job: crontick.Job, step: str) -> None:
    conn = await _connection.get()
    await conn.execute(
        "insert into step_calls (job_id, step, pid) values (%(job_id)s, %(step)s, %(pid)s)",
        {"job_id": job.id, "step": step, "pid": os.getpid()},
    )


@crontick.handler("t_wfproc.pipeline")
async def pipeline(payload: Any, job: crontick.Job) -> None:
    """Three steps; the second hangs on the first attempt (the test kills the tick while it waits)."""

    async def context() -> dict[str, Any]:
        await _called(job, "context")
        return {"text": payload["text"].upper()}

    async def llm(ctx: dict[str, Any]) -> str:
        await _called(job, "llm")
        if job.attempt == 1:
            await asyncio.sleep(3600)
        return f"reply to {ctx['text']}"

    async def send(reply: str) -> str:
        await _called(job, "send")
        return job.step_key("send")

    ctx = await job.step("context", context)
    reply = await job.step("llm", llm, ctx)
    await job.step("send", send, reply)


@crontick.handler("t_wfproc.unrecorded")
def unrecorded(payload: Any, job: crontick.Job) -> None:
    """A sync handler whose step finishes its work, then the process dies before the result is recorded."""

    def charge() -> str:
        asyncio.run(_record_call_in_own_loop(job))
        if job.attempt == 1:
            os.kill(os.getpid(), 9)  # between fn returning and the result being written: the one re-run
        return "charged"

    job.step("charge", charge)


async def _record_call_in_own_loop(job: crontick.Job) -> None:
    conn = await db.connect(os.environ["DATABASE_URL"])
    try:
        await conn.execute(
            "insert into step_calls (job_id, step, pid) values (%(job_id)s, 'charge', %(pid)s)",
            {"job_id": job.id, "pid": os.getpid()},
        )
    finally:
        await conn.close()
