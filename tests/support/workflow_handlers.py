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


# job.map and child jobs under kill -9 (tests/workflows/test_mapping_kill.py, test_children_kill.py): each item,
# spawn and child counts its calls in step_calls; the item or child named by the payload hangs on its first attempt,
# for the test to kill the tick there.
MAP_ITEMS = 12
KIDS = 4


@crontick.handler("t_wfproc.map")
async def map_rows(payload: Any, job: crontick.Job) -> None:
    async def insert(item: int) -> int:
        await _called(job, f"rows[{item}]")
        if item == payload["hang_at"] and job.attempt == 1:
            await asyncio.sleep(3600)
        return item * 10

    results = await job.map("rows", insert, range(MAP_ITEMS), concurrency=payload["concurrency"])
    assert results == [i * 10 for i in range(MAP_ITEMS)], results


@crontick.handler("t_wfproc.kid")
async def kid(payload: Any, job: crontick.Job) -> dict[str, int]:
    await _called(job, f"kid{payload['n']}")
    if payload["n"] == payload["hang"] and job.attempt == 1:
        await asyncio.sleep(3600)
    return {"n": payload["n"]}


@crontick.handler("t_wfproc.parent")
async def parent(payload: Any, job: crontick.Job) -> None:
    async def between(ids: list[int]) -> int:
        await _called(job, "between")
        if payload["hang"] == "parent" and job.attempt == 1:
            await asyncio.sleep(3600)  # killed after the spawn was recorded, before the join
        return len(ids)

    kids = [{"n": n, "hang": payload["hang"]} for n in range(KIDS)]
    ids = await job.spawn("kids", "t_wfproc.kid", kids)
    await job.step("between", between, ids)
    joined = await job.join("kids-done", ids, timeout_seconds=3600)
    await job.step("summary", _summary, job, joined)


async def _summary(job: crontick.Job, joined: list[dict[str, Any]]) -> list[Any]:
    await _called(job, "summary")
    return [(c["status"], c["result"]) for c in joined]
