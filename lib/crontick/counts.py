"""The counts a tick's steps report, kept apart from the steps so a tick imports a step only when it has work for it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReminderCounts:
    sent: int = 0
    failed: int = 0  # failed for good: a 4xx, the last attempt, or the booking went away before a retry
    unknown: int = 0  # may have been delivered; left for a person to decide, never resent automatically
    retried: int = 0  # failed this time, retry scheduled with backoff
    more: bool = False
