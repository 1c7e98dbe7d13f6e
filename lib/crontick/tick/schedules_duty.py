"""The schedules duty: enqueue the slots that have come (and sync new declarations once), their jobs run in this very tick."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from crontick.schedules import registry
from crontick.schedules.registry import ScheduleCounts
from crontick.tick.duty import Duty, Tick, when


class SchedulesDuty(Duty):
    name = "schedules"

    def asks(self, tick: Tick, now: datetime) -> Mapping[str, Any]:
        # New declarations: the probe counts the schedules due, so the step runs once, though no slot is.
        return {"unsynced": registry.needs_sync(tick.conn)}

    async def run(self, tick: Tick) -> ScheduleCounts:
        due = tick.part(self.name).get("due") or registry.needs_sync(tick.conn)
        if not due or tick.out_of_time:
            return ScheduleCounts()
        counts, next_at = await registry.run_due_and_next(
            tick.conn,
            grace_seconds=tick.settings.schedule_grace_seconds,
            max_attempts=_declared_max_attempts(),
        )
        if tick.settings.waker != "none":  # as the reminders duty: without a waker, the next tick's probe finds it
            tick.found_next[self.name] = next_at
        return counts

    def next_at(self, tick: Tick) -> datetime | None:
        """The probe's time when no schedule was due; else, with a waker, the next slot the run's own statements
        read, booked like any due work (without it, an hourly schedule behind a daily safety net ran once a day);
        else None (a scheduler's next call finds it)."""
        part = tick.part(self.name)
        return tick.found_next.get(self.name) if part.get("due") else when(part, "next_at")

    def made_due(self, counts: ScheduleCounts) -> bool:
        return counts.enqueued > 0  # a slot due now runs in this very tick


DUTY = SchedulesDuty()


def _declared_max_attempts() -> Any:
    """The jobs' registry's lookup, imported when a slot is due: an idle tick never loads the registry."""
    from crontick.jobs import registry

    return registry.declared_max_attempts
