"""crontick: background jobs and exactly-once reminders for apps on hosts that scale to zero."""

from __future__ import annotations

from . import builtin as _builtin  # registers the built-in job types
from .backoff import Exponential, Schedule
from .errors import CrontickError, PayloadError, PermanentError, RetryableError, Snooze
from .handlers import Job, handler
from .inbound import inbound
from .kick import kick, kick_async
from .queue import enqueue, enqueue_many
from .schedules import schedule

__all__ = [
    "CrontickError",
    "Exponential",
    "Job",
    "PayloadError",
    "PermanentError",
    "RetryableError",
    "Schedule",
    "Snooze",
    "enqueue",
    "enqueue_many",
    "handler",
    "inbound",
    "kick",
    "kick_async",
    "schedule",
]

del _builtin
