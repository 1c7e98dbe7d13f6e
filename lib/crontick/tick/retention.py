"""Retention: delete finished jobs, tick records, old bookkeeping, audit and inbound events in bounded batches inside a tick's budget."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import psycopg

from crontick import logs
from crontick.db import query
from crontick.settings import Settings
from crontick.tick.pacing import PROCESS, Pacing
from crontick.workflows.steps import SIGNAL_KEEP_DAYS

BATCH_SIZE = 5000  # rows per table per tick: ~0.1-0.3 s here, so a million clear in 200 ticks
KEEP_BOOKKEEPING = timedelta(days=30)  # tick records, finished reminder sends and alerts
KEEP_AUDIT = timedelta(days=90)  # admin_audit: who did what in the admin, kept a quarter
# Inbound events (the dedupe of POST /api/hooks/{name}): longer than any sender redelivers.
# Stripe retries for up to 3 days, GitHub redelivers by hand within 3 days, Svix (Standard
# Webhooks) for about 1.5 days, Twilio not at all. A replay of an older event enqueues again.
KEEP_INBOUND_EVENTS = timedelta(days=30)
MIN_SECONDS = 1.0  # left of the tick's budget, or deleting waits for a later tick
MARGIN_SECONDS = 0.25  # of the budget kept back from the delete's statement_timeout
# How often a process has the record statement look for expired rows (an index probe per table:
# cheap, but `crontick tick --drain` records many times a second). After a full batch it looks
# again on the next tick, so a backlog drains tick after tick.
PROBE_SECONDS = 60.0
# After a run that found less than a full batch anywhere (or failed), the process does not look
# for this long: a row the probe sees but the delete cannot take (locked, or a reminder send
# whose booking was moved into the future) must not cost a statement on every tick.
QUIET_SECONDS = 600.0

# Per process, in its crontick.tick.pacing.Pacing: no probe before retention_from (a tick time),
# unless the clock went back past retention_paused_at. The tick's probe looks at done and failed
# jobs and tick records only (tick records expire every day on a live system, so the runs they
# start clear the rest too). After a full batch of a table it does not look at (retention_owed),
# the next tick of this process deletes again without waiting for the probe.


class Deleted(NamedTuple):  # not a dataclass: every tick's cold start imports this module
    done_jobs: int = 0
    failed_jobs: int = 0
    ticks: int = 0
    alerts: int = 0
    reminder_sends: int = 0
    cancelled_jobs: int = 0  # kept as long as failed ones (CRONTICK_KEEP_FAILED_DAYS)
    audit: int = 0
    inbound_events: int = 0

    @property
    def full(self) -> bool:
        """Some table gave a whole batch, so more is probably waiting: run again next tick."""
        return max(self) >= BATCH_SIZE

    @property
    def unprobed_full(self) -> bool:
        """A table the tick's probe does not look at gave a whole batch: the next tick runs without it."""
        return max(self.cancelled_jobs, self.audit, self.inbound_events) >= BATCH_SIZE


def cutoffs(settings: Settings, now: datetime) -> dict[str, datetime]:
    """What is expired at `now`: rows last changed before these instants (a pure function)."""
    return {
        "done_before": now - timedelta(days=settings.keep_done_days),
        "failed_before": now - timedelta(days=settings.keep_failed_days),
        "kept_before": now - KEEP_BOOKKEEPING,
    }


def fixed_cutoffs(now: datetime) -> dict[str, datetime]:
    """The cutoffs no setting changes (a pure function): the admin audit, inbound events and kept signals."""
    return {
        "audit_before": now - KEEP_AUDIT,
        "inbound_before": now - KEEP_INBOUND_EVENTS,
        "signals_before": now - timedelta(days=SIGNAL_KEEP_DAYS),  # durable steps: signals no wait took
    }


def owed(pacing: Pacing | None = None) -> bool:
    """True after a full batch of a table the probe does not see (crontick.tick.retention_duty then runs retention)."""
    return (pacing or PROCESS).retention_owed


def probe(settings: Settings, now: datetime, pacing: Pacing | None = None) -> dict[str, datetime | None]:
    """The probe's retention cutoffs for this tick, or nulls (which it folds away) between probes."""
    p = pacing or PROCESS
    if (
        p.retention_from is not None
        and p.retention_paused_at is not None
        and p.retention_paused_at <= now < p.retention_from
    ):
        return dict.fromkeys(("done_before", "failed_before", "kept_before"))
    _pause(p, now, PROBE_SECONDS)
    return dict(cutoffs(settings, now))


async def run(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    *,
    now: datetime,
    deadline: float,
    clock: Callable[[], float],
    pacing: Pacing | None = None,
) -> Deleted | None:
    """Delete one bounded batch per table, if the budget allows; never raises for a slow or failed delete.

    Returns None when it did not run (too little budget left) or was cut short. `pacing`: this
    process's (crontick.tick.pacing.PROCESS) unless given.
    """
    p = pacing or PROCESS
    started = clock()
    remaining = deadline - started
    if remaining < MIN_SECONDS:
        p.retention_from = None  # look again next tick
        return None
    timeout_ms = max(int((remaining - MARGIN_SECONDS) * 1000), 1)
    try:
        async with conn.transaction():
            await conn.execute(query("retention_statement_timeout"), {"ms": timeout_ms})
            cur = await conn.execute(
                query("retention_delete", settings.reminder_source_parts),
                {**cutoffs(settings, now), **fixed_cutoffs(now), "limit": BATCH_SIZE},
            )
            row = await cur.fetchone()
    except psycopg.errors.QueryCanceled:
        logs.warning(
            "retention_stopped", detail=f"the delete outran the tick's budget ({timeout_ms} ms); a later tick resumes"
        )
        _pause(p, now, QUIET_SECONDS)
        p.retention_owed = False
        return None
    except psycopg.Error as exc:  # e.g. an app table referencing a job, a deadlock: never fail the tick over it
        logs.error("retention_error", detail=f"{type(exc).__name__}: {exc}")
        _pause(p, now, QUIET_SECONDS)
        p.retention_owed = False
        return None
    assert row is not None  # the statement always returns its one row
    deleted = Deleted(*row)
    p.retention_owed = deleted.unprobed_full
    if deleted.full:
        p.retention_from = None
    else:
        _pause(p, now, QUIET_SECONDS)
    logs.info("retention", **deleted._asdict(), duration_ms=int((clock() - started) * 1000))
    return deleted


def _pause(pacing: Pacing, now: datetime, seconds: float) -> None:
    pacing.retention_from, pacing.retention_paused_at = now + timedelta(seconds=seconds), now


def reset(pacing: Pacing | None = None) -> None:
    """Forget the pause and any backlog (tests, and a process that knows it just made rows expire)."""
    p = pacing or PROCESS
    p.retention_from = p.retention_paused_at = None
    p.retention_owed = False
