"""One tick: send due reminders, claim and run a batch of jobs (rescuing expired leases), record it all."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from . import handlers, logs, queue, reminders, runner, schedules
from .errors import CrontickError, DatabaseUnavailable
from .schedules import ScheduleCounts
from .settings import Settings

# In `crontick tick --drain`, how often reminders are looked at again between batches of jobs.
REMINDER_RECHECK_SECONDS = 1.0


@dataclass(frozen=True)
class JobCounts:
    claimed: int = 0
    succeeded: int = 0
    retried: int = 0
    failed: int = 0
    rescued: int = 0
    released: int = 0  # claimed but not started before the budget ran out; pending again
    fenced: int = 0  # outcomes not written because another tick had taken the job over
    snoozed: int = 0  # handlers that raised crontick.Snooze: pending again, attempt not counted


@dataclass(frozen=True)
class TickResult:
    jobs: JobCounts = field(default_factory=JobCounts)
    reminders: reminders.ReminderCounts = field(default_factory=reminders.ReminderCounts)
    more: bool = False
    duration_ms: int = 0
    schedules: ScheduleCounts = field(default_factory=ScheduleCounts)

    def to_json(self) -> dict[str, Any]:
        rem = asdict(self.reminders)
        rem.pop("more", None)
        return {
            "jobs": asdict(self.jobs), "reminders": rem, "schedules": self.schedules._asdict(),
            "more": self.more, "duration_ms": self.duration_ms,
        }

    def __add__(self, other: TickResult) -> TickResult:
        """Sum two results (for `crontick tick --drain`); `more` is the later one's."""
        jobs = JobCounts(**{k: v + getattr(other.jobs, k) for k, v in asdict(self.jobs).items()})
        rem = {k: v + getattr(other.reminders, k) for k, v in asdict(self.reminders).items() if k != "more"}
        return TickResult(
            jobs=jobs,
            reminders=reminders.ReminderCounts(**rem, more=other.reminders.more),
            more=other.more,
            duration_ms=self.duration_ms + other.duration_ms,
            schedules=ScheduleCounts(*(a + b for a, b in zip(self.schedules, other.schedules, strict=True))),
        )


async def run_tick(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    *,
    now: datetime | None = None,
    source: str = "http",
    clock: Callable[[], float] = time.monotonic,
    send_reminders: bool = True,
    execution_id: str | None = None,
) -> TickResult:
    """Do one bounded unit of due work, in a constant number of statements whatever the batch size:
    the reminders' own, then the schedules' (none when no schedule is declared, one when none is
    due, two when some are), then one claim (plus a rescue and a second claim only when a lease has
    expired), then one statement that records every outcome and the tick itself.

    Reminders go first: they are due at a time a customer sees, and a batch of slow jobs must
    not use up the budget before them. `send_reminders=False` leaves them to a later tick.
    `execution_id` (a Vercel Schedules run's id) is stored in the tick's row and log line, so
    duplicate deliveries of one run can be told apart from separate runs.
    """
    run = {"execution_id": execution_id} if execution_id else {}
    now = now or datetime.now(UTC)
    t0 = clock()
    deadline = t0 + settings.time_budget_seconds
    try:
        sent = reminders.ReminderCounts()
        if send_reminders:
            sent = await reminders.send_due(conn, settings, now=now, deadline=deadline, clock=clock)
        out_of_time = clock() >= deadline
        # Before the claim, so a slot due now is run by this very tick.
        scheduled = ScheduleCounts() if out_of_time else await schedules.run_due(
            conn, grace_seconds=settings.schedule_grace_seconds
        )
        jobs, rescued = ([], queue.RescueCounts(0, 0)) if out_of_time else await _claim(conn, settings, now)
        outcomes = await runner.run_batch(
            jobs, now=now, deadline=deadline, concurrency=settings.concurrency, secrets=settings.secrets, clock=clock
        )
        duration_ms = int((clock() - t0) * 1000)
        partial = TickResult(JobCounts(), sent, False, duration_ms, scheduled).to_json() | run
        tick_log = queue.TickLog(now, source, partial, claimed=len(jobs), rescued=rescued.total)
        recorded = await queue.record(conn, outcomes, now + timedelta(milliseconds=duration_ms), tick_log)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(exc) from exc
    except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn) as exc:
        raise CrontickError("the crontick tables are missing: run `crontick migrate` against DATABASE_URL") from exc
    job_counts = JobCounts(
        claimed=len(jobs),
        succeeded=recorded.succeeded,
        retried=recorded.retried,
        failed=recorded.failed,
        rescued=rescued.total,
        released=recorded.released,
        fenced=recorded.fenced,
        snoozed=recorded.snoozed,
    )
    more = recorded.jobs_due or sent.more or out_of_time or job_counts.released > 0
    result = TickResult(job_counts, sent, more, duration_ms, scheduled)
    if job_counts.fenced:
        logs.warning("fenced", count=job_counts.fenced)
    logs.info("tick", source=source, **run, **result.to_json())
    return result


async def _claim(
    conn: psycopg.AsyncConnection[Any], settings: Settings, now: datetime
) -> tuple[list[handlers.Job], queue.RescueCounts]:
    """Claim a batch; when the claim saw an expired lease, rescue, then fill the batch from the rescued."""
    claim = await queue.claim(conn, now, settings.batch_size, settings.lease_seconds)
    if not claim.expired:
        return claim.jobs, queue.RescueCounts(0, 0)
    rescued = await queue.rescue_expired(conn, now)
    room = settings.batch_size - len(claim.jobs)
    if rescued.retried and room > 0:
        return claim.jobs + await queue.claim_due(conn, now, room, settings.lease_seconds), rescued
    return claim.jobs, rescued


async def drain(
    conn: psycopg.AsyncConnection[Any], settings: Settings, *, max_ticks: int = 1_000_000, source: str = "cli"
) -> TickResult:
    """Tick batch after batch until nothing due is left (for crontab and Kubernetes CronJobs).

    Reminders are looked at on the first tick, then again after a full batch of them or once
    REMINDER_RECHECK_SECONDS have passed: a backlog of quick jobs drains without a reminder
    statement per batch, and no reminder waits longer than it would have had the drain ended.
    """
    total = TickResult()
    checked_at: float | None = None
    for _ in range(max_ticks):
        remind = checked_at is None or time.monotonic() - checked_at >= REMINDER_RECHECK_SECONDS
        result = await run_tick(conn, settings, source=source, send_reminders=remind)
        total = total + result
        if remind:
            checked_at = None if result.reminders.more else time.monotonic()
        if not result.more or (result.jobs.claimed == 0 and not result.reminders.sent and not result.jobs.rescued):
            break
    return total
