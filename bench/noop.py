"""The benchmark's job handler for crontick (CRONTICK_HANDLERS=bench.noop): counts the run, nothing else."""

from __future__ import annotations

from typing import Any

import crontick

from .seen import shared

JOB_TYPE = "bench.noop"
HANDLER_MODULE = __name__  # what CRONTICK_HANDLERS names in a subprocess


@crontick.handler(JOB_TYPE)
async def noop(payload: Any, job: crontick.Job) -> None:
    shared().mark(payload["i"])
