"""The CRONTICK_HANDLERS module of chaos scenario 10: the chaos handlers, plus a schedule every minute that
both skewed servers declare."""

from __future__ import annotations

import crontick

from . import handlers  # noqa: F401  (registers the chaos job handlers)
from .clock import SCHEDULE

crontick.schedule(SCHEDULE, "* * * * *", "chaos.record", {"schedule": SCHEDULE}, catch_up="all")
