"""The one way crontick writes a log line: a JSON object built with json.dumps, never pasted text."""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar, Token
from typing import Any, Protocol

log = logging.getLogger("crontick")


class RunningJob(Protocol):
    """What a log line tells of the job running (crontick.Job has these)."""

    @property
    def id(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def attempt(self) -> int: ...


# The job whose handler runs in this context, and its trace id (None without tracing): set by
# crontick.jobs.runner around each handler call. A context variable, so it follows the handler into
# its tasks and threads (asyncio.to_thread copies it) and no other job's line ever reads it.
_RUNNING: ContextVar[tuple[RunningJob, str | None] | None] = ContextVar("crontick_running_job", default=None)
# The fields JobFields sets on each record, None outside a job.
JOB_FIELDS = ("job_id", "job_type", "attempt", "trace_id")


class _StderrUnlessConfigured(logging.StreamHandler):  # type: ignore[type-arg]
    """crontick's own output, used only while the host has configured no logging of its own.

    Records always propagate: once the root logger has a handler (the host app's logging config,
    Sentry, a platform's), they reach it there and this handler stays quiet, so no line is
    written twice.
    """

    def emit(self, record: logging.LogRecord) -> None:
        if not logging.getLogger().handlers:
            super().emit(record)


def setup() -> None:
    """Make crontick's lines reach the host's handlers, or stderr (one JSON object a line) when it has none.

    Called when the app is built; idempotent. The `crontick` logger's level is set to INFO only
    if the host left it unset.
    """
    if not any(isinstance(h, _StderrUnlessConfigured) for h in log.handlers):
        handler = _StderrUnlessConfigured()
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)


def running(job: RunningJob, trace_id: str | None = None) -> Token[tuple[RunningJob, str | None] | None]:
    """Mark `job` as the one running in this context, until `done(token)`: every line logged meanwhile carries it."""
    return _RUNNING.set((job, trace_id))


def done(token: Token[tuple[RunningJob, str | None] | None]) -> None:
    _RUNNING.reset(token)


def job_fields() -> dict[str, Any]:
    """`job_id`, `job_type`, `attempt` (and `trace_id` when tracing) of the job running in this context; {} outside one."""
    current = _RUNNING.get()
    if current is None:
        return {}
    job, trace_id = current
    fields: dict[str, Any] = {"job_id": job.id, "job_type": job.type, "attempt": job.attempt}
    if trace_id is not None:
        fields["trace_id"] = trace_id
    return fields


class JobFields(logging.Filter):
    """Puts the running job's `job_id`, `job_type`, `attempt` and `trace_id` on every record a handler passes.

    For the host app's own log lines (a handler's `logging.getLogger(__name__).info(...)`): add it to
    the app's logging handler, and its formatter can name them (`%(job_id)s`), or a JSON formatter
    picks them up as extra fields. Outside a job each is None. A field the record already has (from
    `extra=`) is left as it is. crontick's own lines carry them in their JSON without it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        fields = job_fields()
        for name in JOB_FIELDS:
            if not hasattr(record, name):
                setattr(record, name, fields.get(name))
        return True


def line(event: str, **fields: Any) -> str:
    """The JSON text of one event. `event` always wins: a field named "event" cannot forge it.

    A line written while a job runs carries that job's fields (job_fields()); the event's own win.
    """
    fields.pop("event", None)
    if _RUNNING.get() is not None:
        fields = job_fields() | fields
    return json.dumps({"event": event, **fields}, default=str, ensure_ascii=False)


def event(event: str, *, level: int = logging.INFO, **fields: Any) -> None:
    """Log one event as a single JSON line, e.g. `event("tick", level=logging.INFO, jobs=...)`."""
    log.log(level, line(event, **fields))


def info(name: str, **fields: Any) -> None:
    event(name, level=logging.INFO, **fields)


def warning(name: str, **fields: Any) -> None:
    event(name, level=logging.WARNING, **fields)


def error(name: str, **fields: Any) -> None:
    event(name, level=logging.ERROR, **fields)
