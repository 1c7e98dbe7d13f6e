"""One tick: probe for due work, run the duties before the batch (crontick.tick.duties), run the batch, record it all, then the duties after it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import psycopg

from crontick import logs
from crontick.db.connection import translated
from crontick.jobs import shutdown
from crontick.jobs.job import Outcome
from crontick.reminders.window import ReminderCounts
from crontick.schedules.registry import ScheduleCounts
from crontick.settings import Settings
from crontick.tick import probe
from crontick.tick.claim import Claim, RescueCounts, claim_batch
from crontick.tick.duties import DUTIES
from crontick.tick.duty import Duty, Tick
from crontick.tick.follow_up import FOLLOW_UP_LATE_SECONDS, MAX_FOLLOW_UP_TICKS, follow_up_in
from crontick.tick.pacing import PROCESS, Pacing
from crontick.tick.record import Recorded, Statement, TickLog, fetch_row, outcomes_statement, read_recorded
from crontick.tick.wakeups_duty import Delivery, WakeupCounts


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
    yielded: int = 0  # workflows the budget stopped after progress: pending, due at once, attempt not counted
    expired: int = 0  # pending jobs past their start_by, ended `cancelled` unrun by the tick's claims (no attempt)


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
    wakeups: WakeupCounts | None = None  # what the tick booked (crontick.tick.wakeups_duty); None: no waker set
    delivery: Delivery | None = None  # the wake-up it served, or a duplicate it answered without a tick
    # In how many seconds the request ticks again in-process (crontick.tick.follow_up.follow_up_in); not a count.
    follow_up_in: float | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        # vars(), not dataclasses.asdict: the counts are flat, and asdict deep-copies field by
        # field (a tick builds this two or three times: its log row, its log line, its answer).
        rem = dict(vars(self.reminders))
        rem.pop("more", None)
        if rem["error"] is None:
            del rem["error"]
        due = self.next_due_at.isoformat() if self.next_due_at else None
        body = {
            "jobs": dict(vars(self.jobs)),
            "reminders": rem,
            "schedules": self.schedules._asdict(),
            "more": self.more,
            "duration_ms": self.duration_ms,
            "next_due_at": due,
        }
        if self.wakeups is not None:  # a waker is set: its key only then, so the summary without one stays as it was
            body["wakeups"] = self.wakeups._asdict()
        if self.delivery is not None:  # a wake-up's delivery: which instant, and whether it was served before
            body["delivery"] = self.delivery.to_json()
        return body

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
            wakeups=_summed(self.wakeups, other.wakeups),
            delivery=self.delivery or other.delivery,
            follow_up_in=other.follow_up_in,
        )


def _summed(a: WakeupCounts | None, b: WakeupCounts | None) -> WakeupCounts | None:
    if a is None or b is None:
        return a or b
    return WakeupCounts(a.booked + b.booked, a.failed + b.failed)


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
    pacing: Pacing | None = None,
    duties: tuple[Duty, ...] = DUTIES,
    delivered: datetime | None = None,
) -> TickResult:
    """Do one bounded unit of due work, in a constant number of statements whatever the batch size.

    First the probe, one statement that also claims the due jobs: when nothing is due it writes
    the tick's log row, and the tick ends there (an idle tick is one round trip). Otherwise only
    the duties it found work for (crontick.tick.duties): the reminders' own two statements; the
    schedules' two (one when this process has declarations to sync and none is due); a rescue
    only when a lease has expired; a claim of what those made due; then one statement that records
    every outcome and the tick; then alerts and retention, only when due.

    Reminders run first: they are due at a time a customer sees, and a batch of slow jobs must
    not use up the budget before them (jobs claimed but not started by the deadline are
    released, their attempt not counted). `send_reminders=False` leaves them to a later tick.
    `jobs_due=True` (from crontick.tick.drain, whose last tick left jobs due) claims instead of probing.
    `now` None (not a test): the first statement reads the database's clock, and the tick uses that.
    `execution_id` (a Vercel Schedules run's id) is stored in the tick's row and log line, so
    duplicate deliveries of one run can be told apart from separate runs. `pacing`: what this
    process remembers between ticks (crontick.tick.pacing.PROCESS unless given). `duties`: the
    duties it runs (crontick.tick.duties.DUTIES; a test passes others). `delivered`: the instant of the
    wake-up whose delivery this is (crontick.wakers.delivery), for the first tick's wake-ups duty. While its
    budget lasts, it ticks again for work coming due (crontick.tick.follow_up), which is then not booked.
    """
    pace = pacing or PROCESS
    budget_end = clock() + settings.time_budget_seconds
    once = {"source": source, "clock": clock, "send_reminders": send_reminders, "execution_id": execution_id}
    once |= {"pacing": pace, "duties": duties}
    real_time = now is None and clock is time.monotonic  # faked time (tests): nothing to wait for
    first = {"follow_ups": MAX_FOLLOW_UP_TICKS if real_time else 0, "delivered": delivered}
    result = await _tick_once(conn, settings, now=now, jobs_due=jobs_due, deadline=budget_end, **once, **first)
    for left in reversed(range(MAX_FOLLOW_UP_TICKS)):
        if result.follow_up_in is None or result.next_due_at is None:
            break
        # Decided by the tick before its duties after the record ran: wait what is left of that.
        wait = max((result.next_due_at - pace.estimated_now()).total_seconds(), 0.0) + FOLLOW_UP_LATE_SECONDS
        if not await shutdown.sleep(wait):  # no follow-up once the process is exiting
            break
        more = await _tick_once(conn, settings, now=None, jobs_due=False, deadline=budget_end, follow_ups=left, **once)
        result = result + more
    return result


async def _tick_once(conn: psycopg.AsyncConnection[Any], settings: Settings, **kwargs: Any) -> TickResult:
    worked = await work(conn, settings, **kwargs)
    if isinstance(worked, TickResult):
        return worked
    return await finish(conn, settings, worked, clock=kwargs["clock"])


class Worked(NamedTuple):
    """A tick up to its record statement: its batch has run, and finish() writes and reports it."""

    found: probe.Probe
    tick: Tick
    duties: tuple[Duty, ...]  # the tick's: complete() runs those after the record statement
    counts: dict[str, Any]  # what each duty before the batch counted, by its name
    outcomes: list[Outcome]
    duration_ms: int
    next_other_at: datetime | None  # the duties' (reminders, slots); the record statement adds the jobs' own
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
    pacing: Pacing | None = None,
    duties: tuple[Duty, ...] = DUTIES,
    follow_ups: int = 0,
    delivered: datetime | None = None,
) -> Worked | TickResult:
    """A tick's steps before its record statement (see run_tick); an idle tick is over here, a TickResult.

    `prefetched` (crontick.tick.drain) is a batch already claimed by an earlier tick's record
    statement: it takes the probe's place, as `jobs_due`'s claim does. `deadline` (a clock() time):
    when this tick's budget ends, if not a whole CRONTICK_TIME_BUDGET_SECONDS from now (run_tick's
    follow-up ticks share the first one's budget). `duties`: crontick.tick.duties.DUTIES (tests pass others).
    `follow_ups`, `delivered`: see run_tick and crontick.tick.duty.Tick.
    """
    run = {"execution_id": execution_id} if execution_id else {}
    t0 = clock()
    deadline = t0 + settings.time_budget_seconds if deadline is None else deadline
    # A faked `now` (tests) stays the tick's time throughout; else claims after the tick's first
    # statement (after a rescue, for a schedule's slot) take the database's clock again (Tick.claim_now).
    tick = Tick(conn, settings, pacing or PROCESS, clock, deadline, now, send_reminders=send_reminders,
                follow_ups=follow_ups, delivered=delivered)  # fmt: skip
    with translated():
        found = await _probe(tick, prefetched, jobs_due, source, run, duties)
        counts = await _before_batch(tick, duties)
        if found.idle:
            tick.next_due_at = _next_due_at(tick, duties, found.next_job_at)
            after = await _after_record(tick, duties)
            idle = TickResult(
                jobs=JobCounts(expired=tick.expired),
                reminders=counts.get("reminders", ReminderCounts()),
                duration_ms=int((clock() - t0) * 1000),
                next_due_at=tick.next_due_at,
                wakeups=after.get("wakeups"),
                delivery=Delivery.of(tick),
                follow_up_in=tick.follow_up_in,
            )
            return _done(idle, source, run)
    from crontick.jobs import runner  # with the handler registry and retry policies: not loaded by an idle tick

    outcomes = await runner.run_batch(
        tick.jobs,
        now=tick.time,
        deadline=deadline,
        concurrency=settings.concurrency,
        settings=settings,
        clock=clock,
        conn=conn,
        now_at=t0,
    )  # conn: where durable steps are loaded and recorded (crontick.workflows.steps), when a handler uses one
    return _worked(found, tick, counts, outcomes, int((clock() - t0) * 1000), source, run, duties)


async def _probe(
    tick: Tick, prefetched: Claim | None, jobs_due: bool, source: str, run: dict[str, str], duties: tuple[Duty, ...]
) -> probe.Probe:
    """The tick's first statement: the probe, or a claim in its place (which reports expired leases)."""
    if prefetched is not None or jobs_due:
        claim = prefetched or await claim_batch(
            tick.conn, tick.now, tick.settings.batch_size, tick.settings.lease_seconds
        )
        found = probe.from_claim(claim)
    else:
        summary = TickResult().to_json() | run
        found = await probe.look(tick.conn, tick.settings, tick.now, source, summary, tick=tick, asking=duties)
    # The tick's time from here on: the caller's, else the database's clock as the first statement
    # read it. Never this host's clock, which may be minutes off: leases, due times, rescues, retries
    # and the log all agree between hosts. What happens later in the tick adds the time since (a
    # retry's time: run_batch's now_at), or reads the database's clock again (claim_now).
    tick.now, tick.jobs, tick.answer, tick.expired = found.now, found.jobs, found.duties, found.expired
    return found


async def _before_batch(tick: Tick, duties: tuple[Duty, ...]) -> dict[str, Any]:
    """Run the duties before the batch, in order; claim into the batch what they made due."""
    counts: dict[str, Any] = {}
    made_due = False
    for duty in duties:
        if not duty.after_record:
            counts[duty.name] = done = await duty.run(tick)
            made_due = made_due or duty.made_due(done)
    out_of_time = tick.out_of_time  # asked now at the latest, before the batch: the tick's `more` says so
    room = tick.settings.batch_size - len(tick.jobs)
    if made_due and room > 0 and not out_of_time:  # rescued jobs, a slot due now: run in this very tick
        claim = await claim_batch(tick.conn, tick.claim_now, room, tick.settings.lease_seconds)
        tick.jobs, tick.expired = tick.jobs + claim.jobs, tick.expired + claim.expired
    return counts


async def _after_record(tick: Tick, duties: tuple[Duty, ...]) -> dict[str, Any]:
    """Run the duties after the record statement (or an idle probe), in order. None of them fails the tick.
    First, whether the request ticks again in-process (the wake-ups duty books nothing for that)."""
    tick.follow_up_in = follow_up_in(tick)
    return {duty.name: await duty.run(tick) for duty in duties if duty.after_record}


def _next_due_at(tick: Tick, duties: tuple[Duty, ...], next_job_at: datetime | None) -> datetime | None:
    """The earliest of `next_job_at` and the duties' next times (those not due at the probe)."""
    times = (next_job_at, *(duty.next_at(tick) for duty in duties))
    return min((t for t in times if t is not None), default=None)


def _worked(
    found: probe.Probe,
    tick: Tick,
    counts: dict[str, Any],
    outcomes: list[Outcome],
    duration_ms: int,
    source: str,
    run: dict[str, str],
    duties: tuple[Duty, ...],
) -> Worked:
    sent = counts.get("reminders", ReminderCounts())
    scheduled = counts.get("schedules", ScheduleCounts())
    rescued = counts.get("rescue", RescueCounts(0, 0))
    partial = TickResult(JobCounts(), sent, False, duration_ms, scheduled).to_json() | run
    # What the duties did since the probe shows in the next one. The record statement adds the jobs' own next time.
    next_other_at = _next_due_at(tick, duties, None)
    tick_log = TickLog(tick.time, source, partial, len(tick.jobs), rescued.total, next_other_at, tick.expired)
    finished_at = tick.time + timedelta(milliseconds=duration_ms)
    return Worked(found, tick, duties, counts, outcomes, duration_ms, next_other_at, tick_log, finished_at, run)


async def finish(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    worked: Worked,
    *,
    clock: Callable[[], float] = time.monotonic,
    claim_ahead: int = 0,
) -> TickResult:
    """Record a worked tick's outcomes and its log row in one statement, then the duties after it (alerts, retention).

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
    """After the record statement: the duties after it (alerts, retention), the tick's result and its log line."""
    tick = worked.tick
    tick.now, tick.recorded, tick.clock = worked.finished_at, recorded, clock
    job_counts = JobCounts(
        claimed=len(tick.jobs),
        succeeded=recorded.succeeded, retried=recorded.retried, failed=recorded.failed,
        rescued=worked.counts.get("rescue", RescueCounts(0, 0)).total,
        released=recorded.released, fenced=recorded.fenced, snoozed=recorded.snoozed,
        yielded=sum(1 for o in worked.outcomes if o.yielded and o.job_id in recorded.written),
        expired=tick.expired,
    )  # fmt: skip
    more, next_due_at = _pending(tick, worked, recorded, job_counts)
    tick.more, tick.next_due_at = more, next_due_at  # the tick's answer, for the duties after the record (wake-ups)
    with translated():
        after = await _after_record(tick, worked.duties)
    if job_counts.fenced:
        logs.warning("fenced", count=job_counts.fenced)
    sent = worked.counts.get("reminders", ReminderCounts())
    scheduled = worked.counts.get("schedules", ScheduleCounts())
    result = TickResult(
        job_counts, sent, more, worked.duration_ms, scheduled, next_due_at, recorded.next_claim, after.get("wakeups"),
        Delivery.of(tick), tick.follow_up_in,
    )  # fmt: skip
    return _done(result, worked.tick_log.source, worked.run)


def _pending(tick: Tick, worked: Worked, recorded: Recorded, job_counts: JobCounts) -> tuple[bool, datetime | None]:
    """Whether the tick left work due now (`more`), and when work is next due."""
    found = worked.found
    left = (
        worked.counts.get("reminders", ReminderCounts()).more
        or tick.out_of_time
        or job_counts.released > 0
        or job_counts.yielded > 0
    )
    more = recorded.jobs_due or left
    next_job_at = recorded.next_job_at
    if found.throttled_until is not None and len(tick.jobs) < tick.settings.batch_size:
        # A short batch with a rate limit exhausted (crontick.flow): the jobs still due wait for its
        # window to reopen, which is when work is next due, not now.
        more = left
        if next_job_at is None or next_job_at <= worked.finished_at:
            next_job_at = found.throttled_until
        next_job_at = min(next_job_at, found.throttled_until)
    next_due_at = (
        found.now if more else min((t for t in (next_job_at, worked.next_other_at) if t is not None), default=None)
    )
    return more, next_due_at


def _done(result: TickResult, source: str, run: dict[str, str]) -> TickResult:
    logs.info("tick", source=source, **run, **result.to_json())
    return result
