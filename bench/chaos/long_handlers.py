"""The CRONTICK_HANDLERS module of chaos scenario 13: a workflow longer than a tick's budget (a job.map of ITEMS
steps that yields across ticks), then a send through the rig's provider declared at_most_once; its `def` twin does
the same. Each step function counts its calls in chaos_step_calls, itself, so a call whose result was never recorded
(the process killed in between) is counted too."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx

import crontick
from tests.support.process_connection import ProcessConnection

from .workflow_handlers import CALLS_SQL

__all__ = ["CALLS_SQL", "ITEMS", "TYPES"]

ITEMS = 12
ITEM_SECONDS = 0.15
TYPES = ("chaos.long", "chaos.long_sync")
RETRY = crontick.Retry((0.2,), jitter_fraction=0)  # a rescued or failed run is due again at once

_connection = ProcessConnection()


async def _called(job_id: int, step: str) -> None:
    conn = await _connection.get()
    await conn.execute(
        "insert into chaos_step_calls (job_id, step, pid) values (%s, %s, %s)", (job_id, step, os.getpid())
    )


@crontick.step(timeout_seconds=0.4)  # never started on the budget's tail: the workflow yields instead
async def _item(item: dict[str, int]) -> int:
    await _called(item["job"], f"rows[{item['i']}]")
    await asyncio.sleep(ITEM_SECONDS)
    return item["i"]


@crontick.step(at_most_once=True, timeout_seconds=0.5)
async def _send(url: str, job_id: int) -> str:
    """A Twilio-shaped send the rig's provider counts by the number in its Body: it must never arrive twice."""
    await _called(job_id, "send")
    async with httpx.AsyncClient(timeout=5) as client:
        r = await client.post(f"{url}/Messages.json", data={"Body": f"booking {job_id}"})
    r.raise_for_status()
    return str(r.json()["sid"])


def _items(job: crontick.Job) -> list[dict[str, int]]:
    return [{"job": job.id, "i": i} for i in range(ITEMS)]


@crontick.handler("chaos.long", retry=RETRY)
async def long(payload: Any, job: crontick.Job) -> None:
    await job.map("rows", _item, _items(job))
    await job.step("send", _send, payload["url"], job.id)


@crontick.handler("chaos.long_sync", retry=RETRY)
def long_sync(payload: Any, job: crontick.Job) -> None:
    job.map("rows", _item, _items(job))
    job.step("send", _send, payload["url"], job.id)
