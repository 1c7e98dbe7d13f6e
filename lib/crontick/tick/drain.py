"""`crontick tick --drain`: tick batch after batch until nothing due is left, recording one batch while the next runs."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext, suppress
from datetime import datetime
from typing import Any, NamedTuple

import psycopg

from crontick.db.connection import translated
from crontick.db.cutoff import cutoff_of
from crontick.settings import Settings
from crontick.tick.claim import Claim
from crontick.tick.pipeline import TickResult, Worked, complete, finish, record_statement, work
from crontick.tick.record import Statement, fetch_row, read_recorded

# How often reminders are looked at again between batches of jobs.
REMINDER_RECHECK_SECONDS = 1.0
# Batches held claimed beyond the one running: the next one runs while this one's record statement is on the wire.
AHEAD_BATCHES = 2

Bound = Callable[[], AbstractAsyncContextManager[object]]


async def drain(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    *,
    max_ticks: int = 1_000_000,
    source: str = "cli",
    bound: Bound = nullcontext,
    delivered: datetime | None = None,
) -> TickResult:
    """Tick until nothing due is left (for crontab, Kubernetes CronJobs and the Lambda scheduled event).

    Reminders are looked at on the first tick, then again after a full batch of them or once
    REMINDER_RECHECK_SECONDS have passed: a backlog of quick jobs drains without a reminder
    statement per batch, and no reminder waits much longer than it would have had the drain
    ended. In between, a tick's record statement also claims the next batches, and each batch
    runs while the previous one's record statement is on the wire (see _run_ahead). The drain
    ends only on a probed tick, so its summary's next_due_at counts reminders too. Each tick runs
    inside `bound()` (crontick.db.cutoff.bounded: a tick that gets no answer from the database by
    its cut-off ends the drain; batches it had claimed ahead are rescued after their lease).
    `delivered`: the instant of the wake-up whose delivery started the drain, for its first tick (run_tick's).
    """
    total = TickResult()
    checked_at: float | None = None
    left_work = False
    ticks_left = max_ticks
    while ticks_left > 0:
        remind = checked_at is None or time.monotonic() - checked_at >= REMINDER_RECHECK_SECONDS
        skip_probe = left_work and not remind
        async with bound():
            worked = await work(conn, settings, source=source, send_reminders=remind, jobs_due=skip_probe,
                                delivered=delivered)  # fmt: skip
            delivered = None  # served by the first tick
            ahead = _ahead(settings, 0, ticks_left - 1) if checked_at is not None and not remind else 0
            result = (
                worked if isinstance(worked, TickResult) else await finish(conn, settings, worked, claim_ahead=ahead)
            )
        ticks_left -= 1
        total = total + result
        if remind:
            checked_at = None if result.reminders.more else time.monotonic()
        if result.handoff is not None and result.handoff.jobs:  # claimed: run them, whatever comes next
            recheck_at = (checked_at or time.monotonic()) + REMINDER_RECHECK_SECONDS
            result, ran = await _run_ahead(conn, settings, result.handoff, recheck_at, ticks_left, source, bound)
            total, ticks_left = total + result, ticks_left - ran
        stalled = result.jobs.claimed == 0 and not result.reminders.sent and not result.jobs.rescued
        left_work = result.more and not stalled
        if not left_work and not skip_probe and result.handoff is None:
            break
    return total


def _ahead(settings: Settings, held: int, ticks_left: int) -> int:
    """How many jobs a record statement claims for later ticks, holding `held` batches already.

    None when a batch claimed now might not end inside its lease: it may wait for another batch's
    tick to end before its own runs, and each tick ends by its cut-off (crontick.db.cutoff), so the
    lease must outlast two cut-offs. With the defaults (8 s budget, 10 s cut-off, 38 s lease) it does.
    """
    if settings.lease_seconds <= 2 * cutoff_of(settings).seconds:
        return 0
    return max(0, min(AHEAD_BATCHES - held, ticks_left - held)) * settings.batch_size


class _InFlight(NamedTuple):
    """A worked tick's record statement, sent: its row comes back to the task."""

    task: asyncio.Task[tuple[Any, ...]]
    worked: Worked
    statement: Statement
    asked: int  # the jobs it claims ahead


async def _run_ahead(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    first: Claim,
    recheck_at: float,
    ticks_left: int,
    source: str,
    bound: Bound,
) -> tuple[TickResult, int]:
    """Run claimed batches back to back, each while the previous one's record statement runs on the server.

    Per batch: run it (the previous statement is on the wire meanwhile), wait for that
    statement's row, send this batch's statement at once, and only then decode the row (the
    batch it claimed, the counts, the log line): the server is never left waiting on Python.
    Every statement claims what keeps AHEAD_BATCHES batches in hand or on the way, until the
    reminders' recheck is due, the ticks run out, or a claim comes back short (nothing more
    due) or reports an expired lease (the next probed tick rescues). The connection is the
    drain's: psycopg runs one statement at a time on it, so a statement the running batch
    needs (a rescue, an alert) waits its turn. Returns the ticks' sum and how many ran.
    """
    batches = deque(_split(first, settings.batch_size))
    sent: _InFlight | None = None
    total, ran, claiming = TickResult(), 0, True
    try:
        while batches or sent is not None:
            async with bound():
                worked = None
                if batches:
                    done = await work(conn, settings, source=source, send_reminders=False, prefetched=batches.popleft())
                    assert isinstance(done, Worked)  # a claimed batch is never an idle tick
                    worked, ran = done, ran + 1
                previous, sent = sent, None
                statement, asked = None, 0
                if worked is not None:  # built before the wait below, so that it goes out the moment the line is free
                    on_the_way = previous.asked // settings.batch_size if previous is not None and claiming else 0
                    claiming = claiming and time.monotonic() < recheck_at and ran + len(batches) < ticks_left
                    asked = _ahead(settings, len(batches) + on_the_way, ticks_left - ran) if claiming else 0
                    statement = record_statement(settings, worked, asked)
                row: tuple[Any, ...] = ()
                if previous is not None:
                    with translated():
                        row = await previous.task
                if worked is not None and statement is not None:
                    task = asyncio.create_task(fetch_row(conn, statement))
                    sent = _InFlight(task, worked, statement, asked)
                    await asyncio.sleep(0)  # the task's first step sends the statement: before the decoding below
                if previous is not None:
                    recorded = read_recorded(previous.statement, row)
                    result = await complete(conn, settings, previous.worked, recorded)
                    total = total + result
                    if (claimed := recorded.next_claim) is not None:
                        batches.extend(_split(claimed, settings.batch_size))
                        # Fewer than asked: nothing more is due. An expired lease: the next probed tick rescues.
                        claiming = claiming and len(claimed.jobs) == previous.asked and not claimed.leases_expired
    finally:
        if sent is not None:  # the drain was cut off or failed: the batches it claimed are rescued after their lease
            sent.task.cancel()
            with suppress(BaseException):
                await sent.task
    return total, ran


def _split(claim: Claim, size: int) -> list[Claim]:
    return [claim._replace(jobs=claim.jobs[i : i + size]) for i in range(0, len(claim.jobs), size)]
