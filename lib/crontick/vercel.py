"""What Vercel's schedulers send with a tick: the Schedules execution id, recorded with the tick."""

from __future__ import annotations

from collections.abc import Mapping

# Vercel Schedules gives each run an execution id that stays the same across duplicate deliveries
# of that run. The header name below is our reading of Vercel's docs (see docs/deploy/vercel.md);
# legacy Cron Jobs send no such header.
EXECUTION_ID_HEADER = "x-vercel-schedule-execution-id"
EXECUTION_ID_MAX_CHARS = 200


def execution_id(headers: Mapping[str, str]) -> str | None:
    """The run's execution id when the request carries one: printable, bounded, else None."""
    value = headers.get(EXECUTION_ID_HEADER, "").strip()
    if not value or len(value) > EXECUTION_ID_MAX_CHARS or not value.isprintable():
        return None
    return value
