"""The reminders duty: send the reminders the probe found due, first in the tick (a customer sees their time)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import psycopg

from crontick import logs
from crontick.db import query
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
            counts = await send.send_due(
                tick.conn, tick.settings, now=tick.time, deadline=tick.deadline, clock=tick.clock
            )
            if tick.settings.waker != "none" and not counts.more:
                tick.found_next[self.name] = await next_due(tick)
        except ReminderSourceError as exc:  # the source broke since the probe: reminders stop, jobs run
            logs.error("reminder_source", detail=str(exc))
            return ReminderCounts(error=str(exc))
        return counts

    def next_at(self, tick: Tick) -> datetime | None:
        """The probe's time when nothing was due; else the time its run found (with a waker: the next reminder,
        booked like any due work), or None (a scheduler's next call, or `more`, finds it)."""
        part = tick.part(self.name)
        return tick.found_next.get(self.name) if part.get("due") else when(part, "next_at")


async def next_due(tick: Tick) -> datetime | None:
    """When the next reminder falls due, read after this tick claimed its own: one statement, only with a waker."""
    w = reminder_windows(tick.settings)
    try:
        cur = await tick.conn.execute(
            query("reminder_next_due", tick.settings.reminder_source_parts),
            {"now": tick.time, "kinds": w["kinds"], "leads": w["leads"], "floors": w["floors"]},
        )
        row = await cur.fetchone()
    except psycopg.Error as exc:  # a time not found is booked by the next tick or the safety net, not a failed tick
        logs.warning("reminder_next_due", detail=f"{type(exc).__name__}: {exc}"[:500])
        return None
    return row[0] if row is not None else None


DUTY = RemindersDuty()
