"""What a tick asks of reminders before it sends any: each kind's window, and the counts a send reports.

Kept apart from crontick.reminders.send, so that a tick with no reminder due imports no
delivery channel.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from crontick.settings import Settings


@dataclass(frozen=True)
class ReminderCounts:
    sent: int = 0
    failed: int = 0  # failed for good: a 4xx, the last attempt, or the booking went away before a retry
    unknown: int = 0  # may have been delivered; left for a person to decide, never resent automatically
    retried: int = 0  # failed this time, retry scheduled with backoff
    more: bool = False
    error: str | None = None  # why reminders are stopped (the reminder source); None: they ran


def reminder_windows(settings: Settings) -> dict[str, list[Any]]:
    """Each reminder kind with its window, (now + floor, now + lead], as the claim and the probe take them."""
    leads = settings.reminder_leads
    return {
        "kinds": [kind for kind, _ in leads],
        "leads": [lead for _, lead in leads],
        # Longest first, so each kind's window ends where the next shorter one's begins.
        "floors": [lead for _, lead in leads[1:]] + [timedelta(0)],
    }
