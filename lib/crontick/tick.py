"""One tick: rescue expired leases, claim and run a batch, send due reminders, record the tick."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from . import queue, reminders, runner
from .db import query
from .errors import CrontickError, DatabaseUnavailable
from .settings import Settings

log = logging.getLogger("crontick")


@dataclass(frozen=True)
class JobCounts:
    claimed: int = 0
    succeeded: int = 0
    retried: int = 0
    failed: int = 0
    rescued: int = 0
    released: int = 0  # claimed but not started before the budget ran out; pending again
    fenced: int = 0  # outcomes not written because another tick had taken the job over


@dataclass(frozen=True)
class TickResult:
    jobs: JobCounts = field(default_factory=JobCounts)
    reminders: reminders.ReminderCounts = field(default_factory=reminders.ReminderCounts)
    more: bool = False
    duration_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        rem = asdict(self.reminders)
        rem.pop("more", None)
        return {"jobs": asdict(self.jobs), "reminders": rem, "more": self.more, "duration_ms": self.duration_ms}

    def __add__(self, other: TickResult) -> TickResult:
        """Sum two results (for `crontick tick --drain`); `more` is the later one's."""
        jobs = JobCounts(**{k: v + getattr(other.jobs, k) for k, v in asdict(self.jobs).items()})
        rem = {k: v + getattr(other.reminders, k) for k, v in asdict(self.reminders).items() if k != "more"}
        return TickResult(
            jobs=jobs,
            reminders=reminders.ReminderCounts(**rem, more=other.reminders.more),
            more=other.more,
            duration_ms=self.duration_ms + other.duration_ms,
        )


async def run_tick(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    *,
    now: datetime | None = None,
    source: str = "http",
    clock: Callable[[], float] = time.monotonic,
) -> TickResult:
    """Do one bounded unit of due work. A constant number of statements, whatever the batch size."""
    now = now or datetime.now(UTC)
    t0 = clock()
    deadline = t0 + settings.time_budget_seconds
    try:
        rescued = await queue.rescue_expired(conn, now)
        jobs = await queue.claim_due(conn, now, settings.batch_size, settings.lease_seconds)
        outcomes = await runner.run_batch(
            jobs, now=now, deadline=deadline, concurrency=settings.concurrency, secrets=settings.secrets, clock=clock
        )
        written = await queue.record_outcomes(conn, outcomes, now + timedelta(seconds=clock() - t0))
        job_counts = _count(outcomes, written, rescued)
        if clock() < deadline:
            sent = await reminders.send_due(conn, settings, now=now, deadline=deadline, clock=clock)
            out_of_time = False
        else:
            sent, out_of_time = reminders.ReminderCounts(), True
        duration_ms = int((clock() - t0) * 1000)
        finished = now + timedelta(milliseconds=duration_ms)
        partial = TickResult(job_counts, sent, False, duration_ms)
        cur = await conn.execute(
            query("tick_record"),
            {"started_at": now, "finished_at": finished, "source": source, "summary": Jsonb(partial.to_json())},
        )
        row = await cur.fetchone()
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(exc) from exc
    except psycopg.errors.UndefinedTable as exc:
        raise CrontickError("the crontick tables are missing: run `crontick migrate` against DATABASE_URL") from exc
    jobs_due = bool(row and row[0])
    more = jobs_due or sent.more or out_of_time or job_counts.released > 0
    result = TickResult(job_counts, sent, more, duration_ms)
    if job_counts.fenced:
        log.warning('{"event": "fenced", "count": %d}', job_counts.fenced)
    log.info(json.dumps({"event": "tick", "source": source, **result.to_json()}))
    return result


def _count(outcomes: list[queue.Outcome], written: set[int], rescued: queue.RescueCounts) -> JobCounts:
    succeeded = retried = failed = released = fenced = 0
    for o in outcomes:
        if o.job_id not in written:
            fenced += 1
        elif o.status == "done":
            succeeded += 1
        elif o.status == "failed":
            failed += 1
        elif o.attempts < o.claimed_attempt:
            released += 1
        else:
            retried += 1
    return JobCounts(
        claimed=len(outcomes),
        succeeded=succeeded,
        retried=retried,
        failed=failed,
        rescued=rescued.total,
        released=released,
        fenced=fenced,
    )


async def drain(
    conn: psycopg.AsyncConnection[Any], settings: Settings, *, max_ticks: int = 1_000_000, source: str = "cli"
) -> TickResult:
    """Tick batch after batch until nothing due is left (for crontab and Kubernetes CronJobs)."""
    total = TickResult()
    for _ in range(max_ticks):
        result = await run_tick(conn, settings, source=source)
        total = total + result
        if not result.more or (result.jobs.claimed == 0 and not result.reminders.sent and not result.jobs.rescued):
            break
    return total
