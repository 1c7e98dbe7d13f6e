"""The tick's first statement: claim the due jobs, find what else is due and when the next thing falls due, and log an idle tick."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

import psycopg
from psycopg.types.json import Jsonb

from crontick import logs
from crontick.db import query
from crontick.db import source as reminder_source
from crontick.db.schema import source_label
from crontick.errors import ReminderSourceError
from crontick.flow.claim_args import claim_flow
from crontick.reminders.window import reminder_windows
from crontick.settings import Settings
from crontick.tick import upkeep
from crontick.tick.claim import claimed_jobs

if TYPE_CHECKING:
    from crontick.jobs.job import Job


class Probe(NamedTuple):
    """One row of sql/queries.sql `tick_probe`. A new per-tick step adds its column here and there."""

    idle: bool  # nothing is due: the probe has written this tick's log row, and the tick is over
    jobs: list[Job]  # the batch the probe claimed and leased
    now: datetime  # the tick's time: the one passed in, else the database's clock (never this host's)
    next_job_at: datetime | None  # the earliest run_after of a pending job (at or before now: due)
    leases_expired: bool  # a running job's lease has passed: rescue
    reminders_due: bool
    next_reminder_at: datetime | None  # when the first reminder not yet claimed falls due (at or before now: due)
    schedules_due: bool  # a schedule's next slot has come (by the database's clock), or new ones need syncing
    next_slot_at: datetime | None  # the earliest next slot of a declared schedule
    previous_tick_at: datetime | None  # the last tick's finished_at, before this one's row
    alerts_due: bool = False  # pending alerts to send (crontick.tick.alerts), a URL being configured
    retention_due: bool = False  # a job or tick record past its keep period (crontick.tick.retention)
    silent_seconds: float | None = None  # this tick ended a silence this long, and raised its alert
    throttled_until: datetime | None = None  # an exhausted rate limit held back due jobs: when it reopens
    reminders_error: str | None = None  # why reminders are stopped (the source): this tick sends none

    def next_due_at(self, *, jobs: bool = True, reminders: bool = True, slots: bool = True) -> datetime | None:
        """The earliest of the times asked for (a tick leaves out what it has done since the probe)."""
        times = (
            self.next_job_at if jobs else None,
            self.next_reminder_at if reminders else None,
            self.next_slot_at if slots else None,
        )
        return min((t for t in times if t is not None), default=None)


# How many of Probe's fields are crontick_tick_probe's columns, in order (tests/tick/test_probe_rows.py);
# the rest are this module's own.
PROBE_WIDTH = Probe._fields.index("reminders_error")

# What a caller that knows jobs are due (a drain whose last tick left some) uses instead of
# running the probe: it claims with job_claim_due, which still reports expired leases and the time,
# and puts those into this.
_NEVER = datetime.min.replace(tzinfo=UTC)
JOBS_DUE = Probe(False, [], _NEVER, _NEVER, False, False, None, False, None, None)

# How far the database's clock is ahead of this host's (negative: behind), as of this process's last
# probe. Only for pacing what this process decides before the probe answers (whether to look for a
# silence or expired rows); every comparison with rows uses the time the probe returns.
_db_ahead = timedelta(0)


def estimated_now() -> datetime:
    """The database's time as this process last saw it, moved on by this host's clock since."""
    return datetime.now(UTC) + _db_ahead


async def look(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    now: datetime | None,
    source: str,
    idle_summary: dict[str, Any],
    *,
    schedules_unsynced: bool = False,
) -> Probe:
    """Run the probe, claiming up to a batch; `idle_summary` is the log row it writes when it finds nothing due.

    `now` None: the statement reads the database's clock, returns it as Probe.now, and this process
    learns the offset of its own clock from it.
    """
    global _db_ahead
    params = {
        "now": now,
        "limit": settings.batch_size,
        "lease": timedelta(seconds=settings.lease_seconds),
        "source": source,
        "summary": Jsonb(idle_summary),
        "schedules_unsynced": schedules_unsynced,
        **reminder_windows(settings),
        **upkeep.checks(settings, now or estimated_now()),
        "reminder_source": source_label(settings.reminder_source_parts),
        "flow": claim_flow(),
    }
    sent_at = datetime.now(UTC)
    stopped: ReminderSourceError | None = None
    try:
        cur = await conn.execute(query("tick_probe"), params)
    except psycopg.Error as exc:  # the probe reads the reminder source: say so when it is to blame
        try:
            await reminder_source.explain(conn, settings.reminder_source_parts, settings.schema, exc)
        except ReminderSourceError as source_error:
            stopped = source_error
        if stopped is None:
            raise
        # Reminders stop, nothing else does (CONTRACT.md "A source that does not match"): the same probe,
        # claim included (the failed one claimed nothing), without the source. Only a broken source pays it.
        logs.error("reminder_source", detail=str(stopped))
        idle_summary = {**idle_summary, "reminders": {**idle_summary["reminders"], "error": str(stopped)}}
        cur = await conn.execute(
            query("tick_probe"), {**params, "reminder_source": None, "summary": Jsonb(idle_summary)}
        )
    row = await cur.fetchone()
    assert row is not None  # the statement always returns its one row
    found = Probe(row[0], claimed_jobs(row[1]), *row[2:PROBE_WIDTH])
    if stopped is not None:
        found = found._replace(reminders_due=False, next_reminder_at=None, reminders_error=str(stopped))
    if now is None:
        _db_ahead = found.now - sent_at
    return found
