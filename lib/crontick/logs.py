"""The one way crontick writes a log line: a JSON object built with json.dumps, never pasted text."""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger("crontick")


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


def line(event: str, **fields: Any) -> str:
    """The JSON text of one event. `event` always wins: a field named "event" cannot forge it."""
    fields.pop("event", None)
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
