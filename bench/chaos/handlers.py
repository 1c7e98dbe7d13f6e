"""The CRONTICK_HANDLERS module of `make chaos`: a job whose runs are counted, and poison jobs."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import crontick
from tests.support.process_connection import ProcessConnection

# ran_at: the database's clock when the run happened (scenario 10 checks no job ran before it was due).
SIDE_EFFECTS_SQL = (
    "create table if not exists chaos_side_effects"
    " (job_id bigint not null, pid int not null, ran_at timestamptz not null default statement_timestamp())"
)
# The load scenario's inbound hook: GitHub-style deliveries, each event's job counted like chaos.record's.
GITHUB_HOOK = "chaos-github"
GITHUB_SECRET = "chaos-github-secret-" + "g" * 24

_connection = ProcessConnection()


@crontick.handler("chaos.record")
async def record(payload: Any, job: crontick.Job) -> None:
    """Deliberately not idempotent: a job that ran twice leaves two rows."""
    await _side_effect(job)


async def _side_effect(job: crontick.Job) -> None:
    conn = await _connection.get()
    await conn.execute("insert into chaos_side_effects (job_id, pid) values (%s, %s)", (job.id, os.getpid()))


crontick.inbound(GITHUB_HOOK, "chaos.event", verify="github", secret=GITHUB_SECRET)


@crontick.handler("chaos.event")
async def event(payload: Any, job: crontick.Job) -> None:
    """One inbound delivery's job; deliberately not idempotent, like chaos.record."""
    await _side_effect(job)


@crontick.handler("chaos.raise")
def raises(payload: Any, job: crontick.Job) -> None:
    raise RuntimeError(f"poison job {job.id} raised on purpose")


@crontick.handler("chaos.hang", timeout_seconds=0.5)
async def hang(payload: Any, job: crontick.Job) -> None:
    await asyncio.sleep(3600)


@crontick.handler("chaos.garbage")
def garbage(payload: Any, job: crontick.Job) -> Any:
    return {"not": "None", "bytes": b"\xff" * 10}


@crontick.handler("chaos.exit")
def exits(payload: Any, job: crontick.Job) -> None:
    sys.exit(3)


@crontick.handler("chaos.inspect")
async def inspect(payload: Any, job: crontick.Job) -> None:
    """Touches every level of the payload (deep JSON, a 1 MB string), then records the run."""
    depth, value = 0, payload
    while isinstance(value, dict) and "d" in value:
        value, depth = value["d"], depth + 1
    await _side_effect(job)


@crontick.handler("chaos.stale")
async def stale(payload: Any, job: crontick.Job) -> None:
    """Fails its first attempt after a pause, succeeds later: a first attempt's outcome arriving late
    (from a frozen process) would visibly overwrite the newer `done` if writes were not fenced."""
    await asyncio.sleep(float(payload.get("sleep", 1.0)))
    if job.attempt == 1:
        raise RuntimeError(f"job {job.id}: first attempt fails on purpose")
    await _side_effect(job)


@crontick.handler("chaos.slow")
async def slow(payload: Any, job: crontick.Job) -> None:
    """Pauses, then records the run: a tick running these is mid-batch when the database goes away."""
    await asyncio.sleep(float(payload.get("sleep", 1.0)))
    await _side_effect(job)


# Scenario 8's Twilio hook: junk with made-up signatures is refused cheaply, a signed event enqueues one job.
TWILIO_HOOK = "chaos-twilio"
TWILIO_TOKEN = "chaos-twilio-hook-token-" + "w" * 20
crontick.inbound(TWILIO_HOOK, "chaos.event", verify="twilio", secret=TWILIO_TOKEN)
