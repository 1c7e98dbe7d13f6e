"""crontick: background jobs and exactly-once reminders for apps on hosts that scale to zero."""

from __future__ import annotations

from . import builtin as _builtin  # registers the built-in job types
from .backoff import Exponential, Schedule
from .errors import CrontickError, PayloadError, PermanentError
from .handlers import Job, handler
from .queue import enqueue, enqueue_many
from .schedules import schedule

__all__ = [
    "CrontickError",
    "Exponential",
    "Job",
    "PayloadError",
    "PermanentError",
    "Schedule",
    "enqueue",
    "enqueue_many",
    "handler",
    "schedule",
]

del _builtin
