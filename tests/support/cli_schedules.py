"""Schedules for the CLI tests (named in CRONTICK_HANDLERS)."""

from __future__ import annotations

import crontick

crontick.schedule("nightly-report", "30 2 * * *", "t_cli.report", {"kind": "daily"}, time_zone="Europe/Amsterdam")
crontick.schedule("half-hourly", "*/30 * * * *", "t_cli.poll", time_zone="Europe/Amsterdam", catch_up="all")
crontick.schedule("ny-morning", "30 1 * * *", "t_cli.report", time_zone="America/New_York", catch_up="skip")
