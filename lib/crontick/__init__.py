"""crontick: background jobs and exactly-once reminders for apps on hosts that scale to zero."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from crontick.errors import Cancelled, CrontickError, PayloadError, PermanentError, RetryableError, Snooze

# `inbound` and `kick` are both a submodule and a function here: imported eagerly, so that a
# later import of the submodule cannot rebind `crontick.inbound` to the module.
from crontick.hooks.inbound import inbound
from crontick.hooks.kick import kick, kick_async

if TYPE_CHECKING:
    from crontick.app import create_app
    from crontick.channels.function import ReminderMessage, reminder_channel
    from crontick.flow.limits import rate_limit
    from crontick.hooks.signals import signal
    from crontick.jobs.cancel import cancel
    from crontick.jobs.debounce import Debounce
    from crontick.jobs.job import Job
    from crontick.jobs.queue import enqueue, enqueue_many
    from crontick.jobs.registry import handler
    from crontick.reminders.templates import ReminderWords, reminder_template
    from crontick.retry import Exponential, Retry, Schedule
    from crontick.schedules.registry import schedule
    from crontick.workflows.policy import step

# The rest is imported on first use (PEP 562): a cold start that serves an idle tick never
# loads the retry policies, the handler registry, the queue or the schedules' cron parser.
# The built-in job types register when the handler registry is first used (crontick.jobs.registry).
_LAZY = {
    "Exponential": "retry",
    "Retry": "retry",
    "Schedule": "retry",  # the old name of Retry
    "Job": "jobs.job",
    "Debounce": "jobs.debounce",
    "handler": "jobs.registry",
    "enqueue": "jobs.queue",
    "enqueue_many": "jobs.queue",
    "schedule": "schedules.registry",
    "signal": "hooks.signals",
    "cancel": "jobs.cancel",
    "step": "workflows.policy",
    "reminder_template": "reminders.templates",
    "ReminderWords": "reminders.templates",
    "reminder_channel": "channels.function",
    "ReminderMessage": "channels.function",
    "rate_limit": "flow.limits",
    "create_app": "app",  # crontick.create_app(settings=None), as the docs and CONTRACT.md write it
}


def __getattr__(name: str) -> Any:
    if name == "__version__":  # from the installed package's metadata, read only when asked for
        from importlib.metadata import version

        globals()[name] = value = version("crontick")
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'crontick' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "__version__",
    "Cancelled",
    "CrontickError",
    "Debounce",
    "Exponential",
    "Job",
    "PayloadError",
    "PermanentError",
    "Retry",
    "ReminderMessage",
    "ReminderWords",
    "RetryableError",
    "Schedule",
    "Snooze",
    "cancel",
    "create_app",
    "enqueue",
    "enqueue_many",
    "handler",
    "inbound",
    "kick",
    "kick_async",
    "reminder_channel",
    "reminder_template",
    "rate_limit",
    "schedule",
    "signal",
    "step",
]
