"""Schedules and a handler for the schedule process tests (named in CRONTICK_HANDLERS)."""

from __future__ import annotations

from typing import Any

import crontick

# catch_up="all": should the racing ticks start after the next minute too, the boundary slot is still enqueued
# (with "latest" it would be coalesced into the newer one).
crontick.schedule("every-minute", "* * * * *", "t_sched.noop", {"from": "test"}, catch_up="all")


@crontick.handler("t_sched.noop")
def noop(payload: Any, job: crontick.Job) -> None:
    assert job.scheduled_for is not None and job.schedule == "every-minute"
