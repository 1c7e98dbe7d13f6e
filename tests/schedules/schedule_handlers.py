"""Schedules and a handler for the schedule process tests (named in CRONTICK_HANDLERS)."""

from __future__ import annotations

from typing import Any

import crontick

crontick.schedule("every-minute", "* * * * *", "t_sched.noop", {"from": "test"})


@crontick.handler("t_sched.noop")
def noop(payload: Any, job: crontick.Job) -> None:
    assert job.scheduled_for is not None and job.schedule == "every-minute"
