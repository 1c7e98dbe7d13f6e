"""The silence duty: the probe raises an alert when this tick ends a silence of the scheduler; this logs it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from crontick import logs
from crontick.tick import health
from crontick.tick.duty import Duty, Tick


@dataclass(frozen=True)
class SilenceCounts:
    silent_seconds: float | None = None  # this tick ended a silence this long (and its insert raised the alert)


class SilenceDuty(Duty):
    name = "silence"
    after_record = True

    def asks(self, tick: Tick, now: datetime) -> Mapping[str, Any]:
        """The silence threshold, or None while this process's last tick finished less than that long
        ago: no tick can follow a silence then, so the probe skips the check (a null it folds away)."""
        silent_after = health.stale_after_seconds(tick.settings)
        last = tick.pacing.last_finished_at
        recent = last is not None and last <= now < last + timedelta(seconds=silent_after)
        return {"after": None if recent else silent_after}

    async def run(self, tick: Tick) -> SilenceCounts:
        tick.pacing.last_finished_at = tick.time
        silent_seconds = tick.part(self.name).get("silent_seconds")
        if silent_seconds is None:
            return SilenceCounts()
        logs.warning(
            "scheduler_silent",
            silent_seconds=silent_seconds,
            silent_after_seconds=health.stale_after_seconds(tick.settings),
        )
        return SilenceCounts(silent_seconds)


DUTY = SilenceDuty()
