"""CRONTICK_HANDLERS module for the declared-at-scale bench: DECLARED_SCHEDULES schedules and DECLARED_HOOKS hooks.

Every schedule fires daily at a minute of the hour twelve hours from now, so none comes due
while the bench runs (its idle ticks stay idle) and each has exactly one slot in the past day
(the bench makes them all due at once by moving their cursors back a day).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import crontick

SCHEDULES_VARIABLE = "CRONTICK_BENCH_DECLARED_SCHEDULES"
HOOKS_VARIABLE = "CRONTICK_BENCH_DECLARED_HOOKS"
JOB_TYPE = "bench.scheduled_noop"
HANDLER_MODULE = __name__
HOOK_SECRET = "bench-hook-secret-" + "h" * 32
CATCH_UP = ("latest", "all", "skip")


@crontick.handler(JOB_TYPE)
async def scheduled_noop(payload: Any, job: crontick.Job) -> None:
    return None


def declare(schedules: int, hooks: int) -> None:
    """Declare `schedules` schedules and `hooks` bearer hooks (idempotent: the same definitions again)."""
    hour = (datetime.now(UTC).hour + 12) % 24
    for n in range(schedules):
        crontick.schedule(
            f"bench-{n:04d}", f"{n % 60} {hour} * * *", JOB_TYPE, {"n": n}, catch_up=CATCH_UP[n % len(CATCH_UP)]
        )
    for n in range(hooks):
        crontick.inbound(f"bench-hook-{n:03d}", JOB_TYPE, verify="bearer", secret=HOOK_SECRET)


def forget() -> None:
    from crontick.hooks.inbound import forget as forget_hook
    from crontick.hooks.inbound import hooks
    from crontick.schedules import registry as schedules

    for s in schedules.declared():
        if s.name.startswith("bench-"):
            schedules.unregister(s.name)
    for name in list(hooks()):
        if name.startswith("bench-hook-"):
            forget_hook(name)


declare(int(os.environ.get(SCHEDULES_VARIABLE, "0")), int(os.environ.get(HOOKS_VARIABLE, "0")))
