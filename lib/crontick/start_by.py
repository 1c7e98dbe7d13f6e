"""`start_by=`, a job's deadline to start (crontick.enqueue, enqueue_many, job.spawn): checked, as statement parameters."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from crontick.errors import CrontickError

# The longest start_by given in seconds (a year): a deadline is about the near future, and a bound keeps the
# database's interval arithmetic far from its limits.
START_BY_MAX_SECONDS = 365 * 86400


def start_by_params(where: str, start_by: Any, run_after: datetime | None = None) -> dict[str, Any]:
    """`start_by` (a timezone-aware datetime, or seconds from now by the database's clock) as the `start_by` and
    `start_by_seconds` parameters of the insert statements, checked: a job not started by then never starts."""
    if start_by is None:
        return {"start_by": None, "start_by_seconds": None}
    if isinstance(start_by, datetime):
        if start_by.tzinfo is None:
            raise CrontickError(f"{where}: expected a timezone-aware start_by, got naive {start_by.isoformat()}")
        if run_after is not None and run_after > start_by:
            raise CrontickError(
                f"{where}: expected run_after at or before start_by (it could never start), got run_after "
                f"{run_after.isoformat()} and start_by {start_by.isoformat()}"
            )
        return {"start_by": start_by, "start_by_seconds": None}
    if (
        isinstance(start_by, bool)
        or not isinstance(start_by, int | float)
        or not 0 < start_by <= START_BY_MAX_SECONDS  # NaN fails this too
    ):
        raise CrontickError(
            f"{where}: expected start_by as a timezone-aware datetime or seconds from now (above 0, at most "
            f"{START_BY_MAX_SECONDS}), got: {start_by!r:.80}"
        )
    return {"start_by": None, "start_by_seconds": float(start_by)}
