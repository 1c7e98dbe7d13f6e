"""Reading what the `crontick` logger writes: every line kept (LogLines), and each line checked to be one JSON object."""

from __future__ import annotations

import json
import logging
from typing import Any


class LogLines(logging.Handler):
    """Every line the `crontick` logger writes, seen on the logger itself (whatever the root logger has)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def reasons(self, start: int = 0) -> str:
        """The `reason` of each line logged from line `start` on, decoded: the lines are JSON, so quotes are escaped."""
        return "\n".join(str(json.loads(line).get("reason", "")) for line in self.lines[start:])

    def refusals(self, since: int = 0) -> str:
        """The reasons logged for refused ticks (decoded from their JSON lines): they name the failed check,
        never the credential."""
        events = (json.loads(line) for line in self.lines[since:])
        return "\n".join(str(e.get("reason")) for e in events if e.get("event") == "tick_refused")


class JsonLineCheck(logging.Filter):
    """Sees every record the `crontick` logger emits (as a filter, so it changes no handler setup) and
    keeps each message that is not exactly one JSON object: the contract says every line is one."""

    def __init__(self) -> None:
        super().__init__()
        self.bad: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        try:
            parsed = json.loads(message, object_pairs_hook=_no_duplicate_keys)
        except ValueError:  # includes a repeated key: how a pasted value forges "event"
            parsed = None
        if not isinstance(parsed, dict) or "\n" in message or not isinstance(parsed.get("event"), str):
            self.bad.append(message)
        return True


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"repeated keys in {keys}")
    return dict(pairs)
