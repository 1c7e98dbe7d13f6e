"""The CRONTICK_HANDLERS module of chaos scenario 11: a three-step workflow whose step functions count their calls."""

from __future__ import annotations

import os
from typing import Any

import httpx

import crontick
from tests.support.process_connection import ProcessConnection

# One row per call of a step's function, written by the function itself (its own autocommit connection),
# so a call is counted even when its step's result is never recorded (the process killed in between).
CALLS_SQL = (
    "create table if not exists chaos_step_calls (job_id bigint not null, step text not null, pid int not null,"
    " called_at timestamptz not null default clock_timestamp())"
)
# A failed send is retried at once (no 1-minute backoff): the scenario measures steps, not waiting.
RETRY = crontick.Retry((0.2,), jitter_fraction=0)

_connection = ProcessConnection()
_client: httpx.AsyncClient | None = None


async def _called(job: crontick.Job, step: str) -> None:
    conn = await _connection.get()
    await conn.execute(
        "insert into chaos_step_calls (job_id, step, pid) values (%s, %s, %s)", (job.id, step, os.getpid())
    )


async def _prepare(job: crontick.Job) -> dict[str, Any]:
    await _called(job, "prepare")
    return {"text": f"hello from workflow {job.id}"}


async def _send(job: crontick.Job, url: str, text: str, key: str) -> dict[str, Any]:
    """POST to the provider under the step's key; a 500 raises, so the attempt fails and is retried."""
    global _client
    await _called(job, "send")
    if _client is None:
        _client = httpx.AsyncClient(timeout=5)
    r = await _client.post(url, json={"job_id": job.id, "text": text}, headers={"Idempotency-Key": key})
    r.raise_for_status()
    return {"key": key, "id": r.json()["id"]}


async def _record(job: crontick.Job, sent: dict[str, Any]) -> str:
    await _called(job, "record")
    return str(sent["id"])


@crontick.handler("chaos.workflow", retry=RETRY)
async def workflow(payload: Any, job: crontick.Job) -> None:
    prepared = await job.step("prepare", _prepare, job)
    sent = await job.step("send", _send, job, payload["url"], prepared["text"], job.step_key("send"))
    await job.step("record", _record, job, sent)
