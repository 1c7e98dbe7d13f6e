"""Parked: how job.sleep, job.wait_for and a step retry's long delay leave a handler for the runner to park the job."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any


class Parked(BaseException):
    """Raised out of a handler by job.sleep and job.wait_for; the runner parks the job (crontick.jobs.runner).

    A BaseException, like asyncio.CancelledError: a handler's `except Exception` must not swallow it.
    """

    def __init__(
        self,
        name: str,
        kind: str,
        seconds: float,
        event_key: str | None = None,
        since: datetime | None = None,
        deadline: datetime | None = None,
    ) -> None:
        super().__init__(f"{kind} {name!r} for {seconds:g} s")
        self.name, self.kind, self.seconds, self.event_key, self.since = name, kind, seconds, event_key, since
        self.deadline = deadline  # when given, the park ends then, not `seconds` after it begins

    def until(self, now: datetime) -> datetime:
        """When the park that begins at `now` (the tick's time) ends."""
        return self.deadline if self.deadline is not None else now + timedelta(seconds=self.seconds)

    @property
    def status(self) -> str:
        """The job's status while parked: a sleep is pending (due later), a wait is waiting."""
        return "pending" if self.kind == "sleep" else "waiting"

    def park(self, until: datetime) -> list[Any]:
        """The record statement's park element: [name, kind, event_key, step status, result, wait_until, since]
        (since: the oldest kept signal a wait takes; null: any)."""
        if self.kind == "sleep":
            return [self.name, "sleep", None, "done", {"until": until.isoformat()}, None, None]
        since = None if self.since is None else self.since.isoformat()
        return [self.name, "wait", self.event_key, "waiting", None, until.isoformat(), since]
