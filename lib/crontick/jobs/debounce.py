"""crontick.Debounce: merge a burst of enqueues of one key into the one job that has not started yet."""

from __future__ import annotations

import math
import string
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from crontick.errors import ConfigError
from crontick.text import fit_key, text_problem

# How many payloads a debounced job keeps in job.payloads (the newest; sql/functions/job_debounce.sql
# drops the oldest past this). Bounds the row however chatty a sender is.
MAX_PAYLOADS = 100
# ... and how many bytes they may add up to, as JSON text (as PostgreSQL writes each jsonb payload):
# the oldest are dropped first past it. Each merge rewrites the list, so this bounds what one
# enqueue costs however large the events are. A debounced payload larger than this alone is refused.
MAX_PAYLOADS_BYTES = 16 * 1024 * 1024
MAX_SECONDS = 30 * 86400


@dataclass(frozen=True)
class Debounce:
    """`crontick.enqueue(..., debounce=crontick.Debounce(key, seconds, max_seconds))`.

    An enqueue whose `key` matches a job of the same type that has not started (pending and never
    claimed by a tick) merges into that job instead of adding one: the job's payload becomes the
    newest, `job.payloads` gets every merged payload oldest first (the newest 100 within 16 MiB
    kept; a payload over 16 MiB is refused), and its run_after moves to now + `seconds`, never past
    its first enqueue + `max_seconds` (None: no cap). Once a tick has claimed the job, the next
    enqueue with the key starts a new job.

    For `crontick.inbound(..., debounce=...)` the key is a template filled from the event's
    top-level fields: `Debounce("{From}", 3, max_seconds=20)` debounces per WhatsApp sender.
    """

    key: str
    seconds: float
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ConfigError(f"crontick.Debounce: expected a non-empty key string, got: {self.key!r}")
        if problem := text_problem("a key", self.key):  # crontick.text.KEY_MAX_BYTES: it must fit its index
            raise ConfigError(f"crontick.Debounce: {problem}")
        if not _seconds(self.seconds, 0):
            raise ConfigError(f"crontick.Debounce: expected seconds between 0 and {MAX_SECONDS}, got: {self.seconds!r}")
        if self.max_seconds is not None and not _seconds(self.max_seconds, self.seconds):
            raise ConfigError(
                f"crontick.Debounce: expected max_seconds None or between seconds ({self.seconds!r}) and "
                f"{MAX_SECONDS}, got: {self.max_seconds!r}"
            )

    def params(self) -> dict[str, Any]:
        """The SQL function's debounce arguments (sql/functions/enqueue.sql)."""
        max_seconds = None if self.max_seconds is None else float(self.max_seconds)
        return {"debounce_key": self.key, "debounce_seconds": float(self.seconds), "debounce_max_seconds": max_seconds}

    def for_event(self, event: Any) -> Debounce | None:
        """This template with its key filled from `event`'s top-level fields ("{From}"); None when the event
        lacks one of them (it is then enqueued without a debounce: no event is lost for want of a key). A key
        over the bound is replaced by its stable digest (crontick.text.fit_key): the sender still debounces."""
        key = fill(self.key, event)
        return None if key is None else replace(self, key=fit_key(key))


def template_fields(template: str, where: str) -> list[str]:
    """The event fields a hook's template names ("conv:{From}" names From); ConfigError for anything but plain names."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ConfigError(f"{where}: expected a template such as 'conv:{{From}}', got {template!r}: {exc}") from None
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name or not name.replace("_", "").replace("-", "").isalnum() or spec or conversion:
            raise ConfigError(
                f"{where}: expected {{fields}} that name an event's top-level field, such as 'conv:{{From}}', "
                f"got {{{name}}} in {template!r}"
            )
        names.append(name)
    return names


def fill(template: str, event: Any) -> str | None:
    """`template` with each {field} replaced by that field of `event` (a repeated form field: its first value);
    None when `event` is not an object or a field is missing, empty or not a plain value."""
    names = template_fields(template, "template")
    if not names:
        return template
    if not isinstance(event, Mapping):
        return None
    values: dict[str, str] = {}
    for name in names:
        value = event.get(name)
        if isinstance(value, list):
            value = value[0] if value else None
        if value is None or value == "" or isinstance(value, dict | list):
            return None
        values[name] = str(value)
    return template.format_map(values)


def _seconds(value: Any, low: float) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and low <= value <= MAX_SECONDS
    )
