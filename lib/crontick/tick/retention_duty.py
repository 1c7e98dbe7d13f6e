"""The retention duty: delete rows past their keep period (crontick.tick.retention), when the probe finds some."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from crontick.tick import retention
from crontick.tick.duty import Duty, Tick


class RetentionDuty(Duty):
    name = "retention"
    after_record = True  # last: deleting old rows can wait a tick, and is cut short at the budget

    def asks(self, tick: Tick, now: datetime) -> Mapping[str, Any]:
        cutoffs = retention.probe(tick.settings, now, tick.pacing)
        return {key: at.isoformat() if at is not None else None for key, at in cutoffs.items()}

    async def run(self, tick: Tick) -> retention.Deleted | None:
        """None: nothing expired, too little budget left, or cut short."""
        if not (tick.part(self.name).get("due") or retention.owed(tick.pacing)):
            return None
        return await retention.run(
            tick.conn, tick.settings, now=tick.time, deadline=tick.deadline, clock=tick.clock, pacing=tick.pacing
        )


DUTY = RetentionDuty()
