"""The tick's duties, in the order they run: a new per-tick duty is one module (see crontick.tick.duty) and one line here.

Those before the batch run in this order after the probe (reminders first: a customer sees their
time); those `after_record` run after the tick's record statement, or at once on an idle tick.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from crontick.tick import (
    alerts_duty,
    reminders_duty,
    rescue_duty,
    retention_duty,
    schedules_duty,
    silence_duty,
    wakeups_duty,
)
from crontick.tick.duty import Duty, Tick

DUTIES: tuple[Duty, ...] = (
    reminders_duty.DUTY,
    schedules_duty.DUTY,
    rescue_duty.DUTY,
    silence_duty.DUTY,
    wakeups_duty.DUTY,
    alerts_duty.DUTY,
    retention_duty.DUTY,
)


def asks(tick: Tick, now: datetime, duties: tuple[Duty, ...] = DUTIES) -> dict[str, Any]:
    """The probe's parameters for `duties`, each under its name."""
    return {d.name: asked for d in duties if (asked := d.asks(tick, now)) is not None}
