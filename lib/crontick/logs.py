"""The one way crontick writes a log line: a JSON object built with json.dumps, never pasted text."""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger("crontick")


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
