"""crontick: background jobs and exactly-once reminders for apps on hosts that scale to zero."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .errors import CrontickError, PayloadError, PermanentError, RetryableError, Snooze

# `inbound` and `kick` are both a submodule and a function here: imported eagerly, so that a
# later import of the submodule cannot rebind `crontick.inbound` to the module.
from .inbound import inbound
from .kick import kick, kick_async

if TYPE_CHECKING:
    from .backoff import Exponential, Schedule
    from .handlers import Job, handler
    from .queue import enqueue, enqueue_many
    from .schedules import schedule

# The rest is imported on first use (PEP 562): a cold start that serves an idle tick never
# loads the retry policies, the handler registry, the queue or the schedules' cron parser.
# The built-in job types register when the handler registry is first used (crontick.handlers).
_LAZY = {
    "Exponential": "backoff",
    "Schedule": "backoff",
    "Job": "handlers",
    "handler": "handlers",
    "enqueue": "queue",
    "enqueue_many": "queue",
    "schedule": "schedules",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'crontick' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


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
