"""One tick: probe for due work, send due reminders, claim and run a batch of jobs (rescuing expired leases), record it all."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

import psycopg

from crontick import db, logs
from crontick.errors import CrontickError, DatabaseUnavailable, ReminderSourceError
from crontick.jobs.job import Outcome
from crontick.reminders.window import ReminderCounts
from crontick.schedules import registry as schedules
from crontick.schedules.registry import ScheduleCounts
from crontick.settings import Settings
from crontick.tick import probe, upkeep
from crontick.tick.claim import Claim, RescueCounts, claim_batch, claim_due, rescue_expired
from crontick.tick.follow_up import FOLLOW_UP_LATE_SECONDS, MAX_FOLLOW_UP_TICKS, follow_up_wait
from crontick.tick.record import Recorded, Statement, TickLog, fetch_row, outcomes_statement, read_recorded

if TYPE_CHECKING:
    from crontick.jobs.job import Job


@dataclass(frozen=True)
class JobCounts:
    claimed: int = 0
    succeeded: int = 0
    retried: int = 0
    failed: int = 0
    rescued: int = 0
    released: int = 0  # claimed but not started before the budget ran out; pending again
    fenced: int = 0  # outcomes not written because another tick had taken the job over
    snoozed: int = 0  # handlers that raised crontick.Snooze, or parked in job.sleep / job.wait_for: attempt not counted


@dataclass(frozen=True)
class TickResult:
    jobs: JobCounts = field(default_factory=JobCounts)
    reminders: ReminderCounts = field(default_factory=ReminderCounts)
    more: bool = False
    duration_ms: int = 0
    schedules: ScheduleCounts = field(default_factory=ScheduleCounts)
    next_due_at: datetime | None = None  # when work is next due (now, while `more`); None: nothing pending
    # crontick.tick.drain's next batches, claimed by this tick's record statement (finish's claim_ahead); not a count.
    handoff: Claim | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        # vars(), not dataclasses.asdict: the counts are flat, and asdict deep-copies field by
        # field (a tick builds this two or three times: its log row, its log line, its answer).
        rem = dict(vars(self.reminders))
        rem.pop("more", None)
        if rem["error"] is None:
            del rem["error"]
        due = self.next_due_at.isoformat() if self.next_due_at else None
        return {
            "jobs": dict(vars(self.jobs)),
            "reminders": rem,
            "schedules": self.schedules._asdict(),
            "more": self.more,
            "duration_ms": self.duration_ms,
            "next_due_at": due,
        }

    def __add__(self, other: TickResult) -> TickResult:
        """Sum two results (for `crontick tick --drain`); `more` and `next_due_at` are the later one's."""
        jobs = JobCounts(**{k: v + getattr(other.jobs, k) for k, v in vars(self.jobs).items()})
        rem = {
            k: v + getattr(other.reminders, k) for k, v in vars(self.reminders).items() if k not in ("more", "error")
        }
        return TickResult(
            jobs=jobs,
            reminders=ReminderCounts(**rem, more=other.reminders.more, error=other.reminders.error),
            more=other.more,
            duration_ms=self.duration_ms + other.duration_ms,
            schedules=ScheduleCounts(*(a + b for a, b in zip(self.schedules, other.schedules, strict=True))),
            next_due_at=other.next_due_at,
        )


async def run_tick(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    *,
    now: datetime | None = None,
    source: str = "http",
    clock: Callable[[], float] = time.monotonic,
    send_reminders: bool = True,
    jobs_due: bool = False,
    execution_id: str | None = None,
) -> TickResult:
    """Do one bounded unit of due work, in a constant number of statements whatever the batch size.

    First the probe, one statement that also claims the due jobs: when nothing is due it writes
    the tick's log row, and the tick ends there (an idle tick is one round trip). Otherwise only
    the steps it found work for: the reminders' own two statements; the schedules' two (one
    when this process has declarations to sync and none is due), and a claim of what they
    enqueued; a rescue and a second claim only when a lease has expired; then one statement
    that records every outcome and the tick.

    Reminders run first: they are due at a time a customer sees, and a batch of slow jobs must
    not use up the budget before them (jobs claimed but not started by the deadline are
    released, their attempt not counted). `send_reminders=False` leaves them to a later tick.
    `jobs_due=True` (from crontick.tick.drain, whose last tick left jobs due) claims instead of probing.
    `now` None (not a test): the first statement reads the database's clock, and the tick uses that.
    `execution_id` (a Vercel Schedules run's id) is stored in the tick's row and log line, so
    duplicate deliveries of one run can be told apart from separate runs.
    """
    started = clock()
    budget_end = started + settings.time_budget_seconds
    result = await _tick_once(conn, settings, now, source, clock, send_reminders, jobs_due, execution_id, budget_end)
    if now is not None or clock is not time.monotonic:  # faked time (tests): nothing to wait for
        return result
    for _ in range(MAX_FOLLOW_UP_TICKS):
        # The database's time when this tick began, by the offset its probe measured.
        began_at = probe.estimated_now() - timedelta(seconds=clock() - started)
        wait = follow_up_wait(result.more, result.next_due_at, began_at, probe.estimated_now(), budget_end - clock())
        if wait is None:
            break
        await asyncio.sleep(wait + FOLLOW_UP_LATE_SECONDS)
        started = clock()
        more = await _tick_once(conn, settings, None, source, clock, send_reminders, False, execution_id, budget_end)
        result = result + more
    return result


async def _tick_once(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    now: datetime | None,
    source: str,
    clock: Callable[[], float],
    send_reminders: bool,
    jobs_due: bool,
    execution_id: str | None,
    deadline: float,
) -> TickResult:
    worked = await work(
        conn,
        settings,
        now=now,
        source=source,
        clock=clock,
        send_reminders=send_reminders,
        jobs_due=jobs_due,
        execution_id=execution_id,
        deadline=deadline,
    )
    if isinstance(worked, TickResult):
        return worked
    return await finish(conn, settings, worked, clock=clock)


class Worked(NamedTuple):
    """A tick up to its record statement: its batch has run, and finish() writes and reports it."""

    found: probe.Probe
    sent: ReminderCounts
    scheduled: ScheduleCounts
    jobs: list[Job]
    rescued: RescueCounts
    outcomes: list[Outcome]
    out_of_time: bool
    deadline: float
    duration_ms: int
    next_other_at: datetime | None  # reminders and slots; the record statement adds the jobs' own
    tick_log: TickLog
    finished_at: datetime
    run: dict[str, str]


async def work(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    *,
    now: datetime | None = None,
    source: str = "http",
    clock: Callable[[], float] = time.monotonic,
    send_reminders: bool = True,
    jobs_due: bool = False,
    prefetched: Claim | None = None,
    execution_id: str | None = None,
    deadline: float | None = None,
) -> Worked | TickResult:
    """A tick's steps before its record statement (see run_tick); an idle tick is over here, a TickResult.

    `prefetched` (crontick.tick.drain) is a batch already claimed by an earlier tick's record
    statement: it takes the probe's place, as `jobs_due`'s claim does. `deadline` (a clock() time):
    when this tick's budget ends, if not a whole CRONTICK_TIME_BUDGET_SECONDS from now (run_tick's
    follow-up ticks share the first one's budget).
    """
    run = {"execution_id": execution_id} if execution_id else {}
    # Claims made after the tick's first statement (after a rescue, for a schedule's slot) come
    # after the reminders' sends, maybe seconds later: they take the database's clock again, as
    # the first did, so a rate limit's start and a lease are stamped when they happen, never at
    # the tick's start. A faked `now` (tests) stays the tick's time throughout.
    claim_now = now
    t0 = clock()
    deadline = t0 + settings.time_budget_seconds if deadline is None else deadline
    with translated():
        unsynced = schedules.needs_sync(conn)  # new declarations: the schedules step must run once
        if prefetched is not None or jobs_due:  # the claim takes the probe's place, and reports expired leases
            claim = prefetched or await claim_batch(conn, now, settings.batch_size, settings.lease_seconds)
            found = probe.JOBS_DUE._replace(**claim._asdict())  # a Claim's fields are Probe's, by name
        else:
            summary = TickResult().to_json() | run
            found = await probe.look(conn, settings, now, source, summary, schedules_unsynced=unsynced)
        # The tick's time from here on: the caller's, else the database's clock as the first statement
        # read it. Never this host's clock, which may be minutes off: leases, due times, rescues, retries
        # and the log all agree between hosts. What happens later in the tick adds the time since (a
        # retry's time: run_batch's now_at), or reads the database's clock again (claim_now).
        now = found.now
        if found.idle:
            await upkeep.after_tick(
                conn,
                settings,
                silent_seconds=found.silent_seconds,
                alerts_due=False,
                retention_due=False,
                now=now,
                deadline=deadline,
                clock=clock,
            )
            idle = TickResult(
                reminders=ReminderCounts(error=found.reminders_error),
                duration_ms=int((clock() - t0) * 1000),
                next_due_at=found.next_due_at(),
            )
            return _done(idle, source, run)
        # Whether there is anything to do is decided here, step by step, from the probe's checks.
        # A new per-tick step adds its `if found.<step>_due:` call (into its own module) below.
        sent = ReminderCounts(error=found.reminders_error)
        if send_reminders and found.reminders_due:
            # Imported here, with its channels: a tick that finds no reminder due never loads them.
            from crontick.reminders import send as reminders

            try:
                sent = await reminders.send_due(conn, settings, now=now, deadline=deadline, clock=clock)
            except ReminderSourceError as exc:  # the source broke since the probe: reminders stop, jobs run
                logs.error("reminder_source", detail=str(exc))
                sent = ReminderCounts(error=str(exc))
        out_of_time = clock() >= deadline
        scheduled = ScheduleCounts()
        if (found.schedules_due or unsynced) and not out_of_time:
            scheduled = await schedules.run_due(conn, grace_seconds=settings.schedule_grace_seconds)
        jobs, rescued = found.jobs, RescueCounts(0, 0)
        if found.leases_expired and not out_of_time:
            jobs, rescued = await _rescue(conn, settings, now, claim_now, jobs)
        room = settings.batch_size - len(jobs)
        if scheduled.enqueued and room > 0 and not out_of_time:  # a slot due now runs in this very tick
            jobs = jobs + await claim_due(conn, claim_now, room, settings.lease_seconds)
    from crontick.jobs import runner  # with the handler registry and retry policies: not loaded by an idle tick

    outcomes = await runner.run_batch(
        jobs,
        now=now,
        deadline=deadline,
        concurrency=settings.concurrency,
        settings=settings,
        clock=clock,
        conn=conn,
        now_at=t0,
    )  # conn: where durable steps are loaded and recorded (crontick.workflows.steps), when a handler uses one
    duration_ms = int((clock() - t0) * 1000)
    partial = TickResult(JobCounts(), sent, False, duration_ms, scheduled).to_json() | run
    # Reminders and slots due at the start were done (else `more`): their next shows in the next
    # probe. The record statement adds the jobs' own next time.
    next_other_at = found.next_due_at(jobs=False, reminders=not found.reminders_due, slots=not found.schedules_due)
    tick_log = TickLog(now, source, partial, len(jobs), rescued.total, next_other_at)
    finished_at = now + timedelta(milliseconds=duration_ms)
    return Worked(
        found, sent, scheduled, jobs, rescued, outcomes, out_of_time, deadline, duration_ms, next_other_at, tick_log,
        finished_at, run,
    )  # fmt: skip


async def finish(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    worked: Worked,
    *,
    clock: Callable[[], float] = time.monotonic,
    claim_ahead: int = 0,
) -> TickResult:
    """Record a worked tick's outcomes and its log row in one statement, then its upkeep (alerts, retention).

    `claim_ahead` > 0 (crontick.tick.drain): the same statement then claims up to that many due jobs
    for the ticks after this one, handed over in TickResult.handoff.
    """
    statement = record_statement(settings, worked, claim_ahead)
    with translated():
        row = await fetch_row(conn, statement)
    return await complete(conn, settings, worked, read_recorded(statement, row), clock=clock)


def record_statement(settings: Settings, worked: Worked, claim_ahead: int = 0) -> Statement:
    """finish()'s statement, built apart so that crontick.tick.drain can send it while it runs the next batch."""
    ahead = (claim_ahead, settings.lease_seconds) if claim_ahead > 0 else None
    return outcomes_statement(worked.outcomes, worked.finished_at, worked.tick_log, claim_next=ahead)


async def complete(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    worked: Worked,
    recorded: Recorded,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> TickResult:
    """After the record statement: the tick's upkeep (alerts, retention), its result and its log line."""
    w = worked
    with translated():
        await upkeep.after_tick(
            conn,
            settings,
            silent_seconds=w.found.silent_seconds,
            alerts_due=recorded.alerts_due or w.found.alerts_due,
            retention_due=w.found.retention_due,
            now=w.finished_at,
            deadline=w.deadline,
            clock=clock,
        )
    job_counts = JobCounts(
        claimed=len(w.jobs),
        succeeded=recorded.succeeded,
        retried=recorded.retried,
        failed=recorded.failed,
        rescued=w.rescued.total,
        released=recorded.released,
        fenced=recorded.fenced,
        snoozed=recorded.snoozed,
    )
    more = recorded.jobs_due or w.sent.more or w.out_of_time or job_counts.released > 0
    next_job_at = recorded.next_job_at
    if w.found.throttled_until is not None and len(w.jobs) < settings.batch_size:
        # A short batch with a rate limit exhausted (crontick.flow): the jobs still due wait for its
        # window to reopen, which is when work is next due, not now.
        more = w.sent.more or w.out_of_time or job_counts.released > 0
        if next_job_at is None or next_job_at <= w.finished_at:
            next_job_at = w.found.throttled_until
        next_job_at = min(next_job_at, w.found.throttled_until)
    next_due_at = (
        w.found.now if more else min((t for t in (next_job_at, w.next_other_at) if t is not None), default=None)
    )
    if job_counts.fenced:
        logs.warning("fenced", count=job_counts.fenced)
    result = TickResult(job_counts, w.sent, more, w.duration_ms, w.scheduled, next_due_at, recorded.next_claim)
    return _done(result, w.tick_log.source, w.run)


@contextmanager
def translated() -> Iterator[None]:
    """psycopg's errors, as the tick's callers handle them."""
    try:
        yield
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(exc) from exc
    except (
        psycopg.errors.InvalidSchemaName,
        psycopg.errors.UndefinedTable,
        psycopg.errors.UndefinedColumn,
        psycopg.errors.UndefinedFunction,
    ) as exc:
        # UndefinedFunction: the probe and the claim are functions that `crontick migrate` creates;
        # InvalidSchemaName: CRONTICK_SCHEMA names a schema no migrate has created in this database.
        raise CrontickError(
            f"the crontick tables are missing or out of date in schema {db.current_schema()!r}: "
            "run `crontick migrate` against DATABASE_URL (with the same CRONTICK_SCHEMA)"
        ) from exc


def _done(result: TickResult, source: str, run: dict[str, str]) -> TickResult:
    logs.info("tick", source=source, **run, **result.to_json())
    return result


async def _rescue(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    now: datetime,
    claim_now: datetime | None,
    claimed: list[Job],
) -> tuple[list[Job], RescueCounts]:
    """Rescue the leases expired by the tick's `now`, then fill what is left of the batch from the
    rescued, claimed at `claim_now` (None: the database's clock, see work)."""
    rescued = await rescue_expired(conn, now)
    room = settings.batch_size - len(claimed)
    if rescued.retried and room > 0:
        return claimed + await claim_due(conn, claim_now, room, settings.lease_seconds), rescued
    return claimed, rescued
