"""Booking reminders (placeholder until the reminders work lands: sends nothing)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from .settings import Settings


@dataclass(frozen=True)
class ReminderCounts:
    sent: int = 0
    failed: int = 0
    unknown: int = 0
    more: bool = False


async def send_due(
    conn: psycopg.AsyncConnection[Any], settings: Settings, *, now: datetime, deadline: float, clock: Callable[[], float]
) -> ReminderCounts:
    return ReminderCounts()
