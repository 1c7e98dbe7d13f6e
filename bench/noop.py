"""The benchmark's job handlers for crontick (CRONTICK_HANDLERS=bench.noop), async and sync: each counts the run, nothing else."""

from __future__ import annotations

from typing import Any

import crontick

from .seen import shared

JOB_TYPE = "bench.noop"
SYNC_JOB_TYPE = "bench.noop_sync"  # the same, as a plain `def`: most Python handlers are
STEPS_JOB_TYPE = "bench.steps3"  # the same no-op as a workflow of three durable steps (bench.workflows)
STEPS_SYNC_JOB_TYPE = "bench.steps3_sync"  # that workflow as a plain `def`, its steps plain functions
HANDLER_MODULE = __name__  # what CRONTICK_HANDLERS names in a subprocess


@crontick.handler(JOB_TYPE)
async def noop(payload: Any, job: crontick.Job) -> None:
    shared().mark(payload["i"])


@crontick.handler(SYNC_JOB_TYPE)
def noop_sync(payload: Any, job: crontick.Job) -> None:
    shared().mark(payload["i"])


def _step(i: int) -> int:
    return i


@crontick.handler(STEPS_JOB_TYPE)
async def steps3(payload: Any, job: crontick.Job) -> None:
    i = payload["i"]
    await job.step("first", _step, i)
    await job.step("second", _step, i)
    await job.step("third", _step, i)
    shared().mark(i)


@crontick.handler(STEPS_SYNC_JOB_TYPE)
def steps3_sync(payload: Any, job: crontick.Job) -> None:
    i = payload["i"]
    job.step("first", _step, i)
    job.step("second", _step, i)
    job.step("third", _step, i)
    shared().mark(i)
