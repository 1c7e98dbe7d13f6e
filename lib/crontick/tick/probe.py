"""The tick's first statement: claim the due jobs, ask each duty's question, find when the next thing falls due, and log an idle tick."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

import psycopg
from psycopg.types.json import Jsonb

from crontick import logs
from crontick.db import query, source
from crontick.db.schema import source_label
from crontick.errors import ReminderSourceError
from crontick.flow.claim_args import claim_flow
from crontick.settings import Settings
from crontick.tick import duties
from crontick.tick.claim import Claim, claimed_jobs
from crontick.tick.duty import Duty, Tick
from crontick.tick.pacing import PROCESS, Pacing

if TYPE_CHECKING:
    from crontick.jobs.job import Job


class Probe(NamedTuple):
    """One row of sql/queries.sql `tick_probe`: the jobs' own columns, and each duty's answer by its name."""

    idle: bool  # nothing is due: the probe has written this tick's log row, and the tick is over
    jobs: list[Job]  # the batch the probe claimed and leased
    now: datetime  # the tick's time: the one passed in, else the database's clock (never this host's)
    next_job_at: datetime | None  # the earliest run_after of a pending job (at or before now: due)
    throttled_until: datetime | None  # an exhausted rate limit held back due jobs: when it reopens
    duties: dict[str, dict[str, Any]]  # each duty's part of the answer (crontick.tick.duties), by its name
    expired: int = 0  # pending jobs past their start_by that its claim ended `cancelled` (jobs.expired)


_NEVER = datetime.min.replace(tzinfo=UTC)


def from_claim(claim: Claim) -> Probe:
    """What a caller that knows jobs are due (a drain whose last tick left some) has instead of the probe's
    answer: a claim with job_claim_due, which still reports expired leases (for the rescue duty) and the time."""
    rescue = {"rescue": {"due": claim.leases_expired}}
    return Probe(False, claim.jobs, claim.now, _NEVER, claim.throttled_until, rescue, claim.expired)


def parameters(
    settings: Settings, now: datetime | None, source_name: str, idle_summary: dict[str, Any], asks: dict[str, Any]
) -> dict[str, Any]:
    """The probe's parameters: the claim's, the idle tick's log row, and the duties' `asks`."""
    return {
        "now": now,
        "limit": settings.batch_size,
        "lease": timedelta(seconds=settings.lease_seconds),
        "source": source_name,
        "summary": Jsonb(idle_summary),
        "reminder_source": source_label(settings.reminder_source_parts),
        "flow": claim_flow(),
        "asks": Jsonb(asks),
    }


async def look(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    now: datetime | None,
    source_name: str,
    idle_summary: dict[str, Any],
    *,
    tick: Tick | None = None,
    pacing: Pacing | None = None,
    asking: tuple[Duty, ...] = duties.DUTIES,
) -> Probe:
    """Run the probe, claiming up to a batch; `idle_summary` is the log row it writes when it finds nothing due.

    `now` None: the statement reads the database's clock, returns it as Probe.now, and this process
    (its `pacing`, else the tick's, else PROCESS) learns the offset of its own clock from it.
    `asking`: the duties whose questions it asks (crontick.tick.duties.DUTIES unless a test passes others).
    """
    if tick is None:
        tick = Tick(conn, settings, pacing or PROCESS, time.monotonic, float("inf"), now)
    pace = tick.pacing
    params = parameters(
        settings, now, source_name, idle_summary, duties.asks(tick, now or pace.estimated_now(), asking)
    )
    sent_at = datetime.now(UTC)
    stopped: ReminderSourceError | None = None
    try:
        cur = await conn.execute(query("tick_probe"), params)
    except psycopg.Error as exc:  # the probe reads the reminder source: say so when it is to blame
        try:
            await source.explain(conn, settings.reminder_source_parts, settings.schema, exc)
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
    # Probe's fields are the statement's columns, in order (tests/tick/test_probe_rows.py); any after them are not read.
    idle, jobs, found_now, next_job_at, throttled_until, answer, expired = row[: len(Probe._fields)]
    if stopped is not None:
        answer["reminders"] = {"due": False, "next_at": None, "error": str(stopped)}
    if now is None:
        pace.db_ahead = found_now - sent_at
    return Probe(idle, claimed_jobs(jobs), found_now, next_job_at, throttled_until, answer, expired)
