"""The reminders duty: send the reminders the probe found due, first in the tick (a customer sees their time)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from crontick import logs
from crontick.errors import ReminderSourceError
from crontick.reminders.window import ReminderCounts, reminder_windows
from crontick.tick.duty import Duty, Tick, when


class RemindersDuty(Duty):
    name = "reminders"

    def asks(self, tick: Tick, now: datetime) -> Mapping[str, Any]:
        """Each reminder kind with its window, as [kind, lead, floor] in seconds."""
        w = reminder_windows(tick.settings)
        return {
            "windows": [
                [kind, lead.total_seconds(), floor.total_seconds()]
                for kind, lead, floor in zip(w["kinds"], w["leads"], w["floors"], strict=True)
            ]
        }

    async def run(self, tick: Tick) -> ReminderCounts:
        """Sent before the jobs: a batch of slow jobs must not use up the budget before them.
        Not at all with send_reminders False, or while the source is broken (the count says why)."""
        part = tick.part(self.name)
        error = part.get("error")
        if not (tick.send_reminders and part.get("due")):
            return ReminderCounts(error=error)
        # Imported here, with its channels: a tick that finds no reminder due never loads them.
        from crontick.reminders import send

        try:
            return await send.send_due(
                tick.conn, tick.settings, now=tick.time, deadline=tick.deadline, clock=tick.clock
            )
        except ReminderSourceError as exc:  # the source broke since the probe: reminders stop, jobs run
            logs.error("reminder_source", detail=str(exc))
            return ReminderCounts(error=str(exc))

    def next_at(self, tick: Tick) -> datetime | None:
        part = tick.part(self.name)
        return None if part.get("due") else when(part, "next_at")


DUTY = RemindersDuty()
