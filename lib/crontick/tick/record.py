"""Record: write a whole batch's outcomes (fenced), its counts and the tick's log row in one statement."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import psycopg
from psycopg.types.json import Json, Jsonb

from crontick.db import query
from crontick.flow.claim_args import claim_flow
from crontick.jobs.job import Outcome
from crontick.tick.claim import Claim, claim_of


class TickLog(NamedTuple):
    """The crontick_ticks row that the record statement writes along with the outcomes."""

    started_at: datetime
    source: str
    summary: dict[str, Any]  # the tick's JSON summary; its job counts are filled in by the statement
    claimed: int
    rescued: int
    next_other_at: datetime | None = None  # when reminders or slots are next due; the statement adds the jobs'
    expired: int = 0  # jobs the tick's claims ended `cancelled` past their start_by


class Recorded(NamedTuple):
    """A record statement's row: crontick_job_record_outcomes's columns, by name and in order, up to
    next_claim (tests/tick/test_record_rows.py)."""

    written: set[int]
    succeeded: int
    retried: int
    failed: int
    released: int
    fenced: int  # outcomes not written: another tick had taken the job over
    jobs_due: bool  # pending jobs are due at `now`, so the caller has more to do
    next_job_at: datetime | None  # the earliest run_after of a pending job, this batch's retries included
    snoozed: int = 0  # handlers that raised crontick.Snooze
    alerts_due: bool = False  # this statement raised an alert, or pending ones are due: the tick sends them
    next_claim: Claim | None = None  # the next batch, when record() was asked to claim it


# How many of Recorded's fields are crontick_job_record_outcomes's columns (the rest are this module's own);
# crontick_job_record_and_claim's row is those columns and then a claim's.
RECORDED_WIDTH = Recorded._fields.index("next_claim")


def _int_array(values: list[int]) -> str:
    """A PostgreSQL array literal (the statement casts it): psycopg dumps a list element by element in Python."""
    return "{" + ",".join(map(str, values)) + "}"


def _ms_array(values: list[float | None]) -> str:
    """Run times in ms as an array literal, as _int_array (to the microsecond; NULL for none)."""
    return "{" + ",".join("NULL" if v is None else f"{v:.3f}" for v in values) + "}"


class Statement(NamedTuple):
    """A named query with its parameters, built before it is sent (crontick.tick.drain builds one while another runs)."""

    name: str
    params: dict[str, Any]


async def record_batch(
    conn: psycopg.AsyncConnection[Any],
    outcomes: Sequence[Outcome],
    now: datetime,
    tick: TickLog | None = None,
    *,
    claim_next: tuple[int, float] | None = None,
) -> Recorded:
    """Write every outcome (fenced) and, given `tick`, its log row: one statement either way.

    `claim_next` (limit, lease seconds): the same statement then claims the next batch, returned
    in Recorded.next_claim, by the database's clock (a drain's next tick: one round trip a batch).
    """
    statement = outcomes_statement(outcomes, now, tick, claim_next=claim_next)
    return read_recorded(statement, await fetch_row(conn, statement))


def outcomes_statement(
    outcomes: Sequence[Outcome],
    now: datetime,
    tick: TickLog | None = None,
    *,
    claim_next: tuple[int, float] | None = None,
) -> Statement:
    """record()'s statement. Succeeded attempts, most of a batch, go as arrays (ids, claimed attempts, run times)
    that the server reads without parsing; the others as one JSON array of rows."""
    done_ids: list[int] = []
    done_attempts: list[int] = []
    done_ms: list[float | None] = []
    others: list[list[Any]] = []
    for o in outcomes:
        # A slow attempt goes with the others: its flag counts it in the per-type ring (rare, so the short path stays).
        if (
            o.status == "done"
            and o.attempts == o.claimed_attempt
            and o.last_error is None
            and not (o.snoozed or o.slow)
        ):
            done_ids.append(o.job_id)
            done_attempts.append(o.claimed_attempt)
            done_ms.append(o.ms)
        else:
            others.append(
                [
                    o.job_id,
                    o.claimed_attempt,
                    o.status,
                    o.attempts,
                    o.run_after and o.run_after.isoformat(),
                    o.last_error,
                    o.snoozed,
                    o.traceback,
                    o.park,  # durable steps: the sleep or wait that parked the job (crontick.workflows)
                    o.yielded,  # a workflow that yielded to a later tick (crontick.jobs.decision.yields)
                    o.slow,  # ran CRONTICK_SLOW_JOB_SECONDS or longer (crontick.jobs.runner)
                    o.ms,  # how long it ran: the per-type durations (sql/migrations/0047_record_run_times.sql)
                ]
            )
    params: dict[str, Any] = {
        "now": now,
        "done_ids": _int_array(done_ids),
        "done_attempts": _int_array(done_attempts),
        "others": Json(others),
        "log": False,
        "started_at": None,
        "source": None,
        "summary": None,
        "jobs": None,
        "next_other_at": None,
        "done_ms": _ms_array(done_ms),
    }
    if tick is not None:
        params.update(
            log=True,
            started_at=tick.started_at,
            source=tick.source,
            summary=Jsonb(tick.summary),
            jobs=Jsonb({"claimed": tick.claimed, "rescued": tick.rescued, "expired": tick.expired}),
            next_other_at=tick.next_other_at,
        )
    if claim_next is None:
        return Statement("job_record_outcomes", params)
    params.update(limit=claim_next[0], lease=timedelta(seconds=claim_next[1]), flow=claim_flow())
    return Statement("job_record_and_claim", params)


async def fetch_row(conn: psycopg.AsyncConnection[Any], statement: Statement) -> tuple[Any, ...]:
    """Run a statement that answers one row, and return that row as it came (decoding is the caller's)."""
    cur = await conn.execute(query(statement.name), statement.params)
    row: tuple[Any, ...] | None = await cur.fetchone()
    assert row is not None  # the statements run this way always return their one row
    return row


def read_recorded(statement: Statement, row: tuple[Any, ...]) -> Recorded:
    """The counts of a record statement's row, and the batch it claimed, if it claimed one."""
    recorded = Recorded(set(row[0]), *row[1:RECORDED_WIDTH])
    if statement.name == "job_record_outcomes":
        return recorded
    return recorded._replace(next_claim=claim_of(row, RECORDED_WIDTH))


async def record_outcomes(conn: psycopg.AsyncConnection[Any], outcomes: Sequence[Outcome], now: datetime) -> set[int]:
    """Write every outcome in one statement; returns the ids written (the rest were fenced off)."""
    if not outcomes:
        return set()
    return (await record_batch(conn, outcomes, now)).written
