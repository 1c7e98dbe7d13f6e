"""The job queue's SQL operations: enqueue, rescue, claim and record, one statement each."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

import psycopg
from psycopg.types.json import Json, Jsonb

from .db import query
from .errors import CrontickError

if TYPE_CHECKING:  # imported where jobs are built: an idle tick never loads the handler registry
    from .handlers import Job

STATUSES = ("pending", "running", "done", "failed", "cancelled")  # cancelled: set only by an admin
RESCUE_LIMIT = 1000


class Outcome(NamedTuple):
    """How one claimed attempt ended, as the record statement writes it.

    A NamedTuple, like the other values here: a tick makes one per job, and both building one
    and defining the class (at import, so on every cold start) cost a fraction of a frozen
    dataclass's.
    """

    job_id: int
    claimed_attempt: int
    status: str  # done | failed | pending (retry, or released unstarted)
    attempts: int
    run_after: datetime | None = None
    last_error: str | None = None
    snoozed: bool = False  # a snooze: pending again with its attempt handed back, and counted in jobs.snoozes


class RescueCounts(NamedTuple):
    retried: int
    failed: int

    @property
    def total(self) -> int:
        return self.retried + self.failed


def _insert_params(
    type: str, payload: Any, run_after: datetime | None, max_attempts: int | None, key: str | None
) -> dict[str, Any]:
    _check_type(type, "enqueue")
    _check_options(f"enqueue({type!r})", run_after, max_attempts)
    return {"type": type, "payload": Jsonb(payload), "run_after": run_after, "max_attempts": max_attempts, "key": key}


def _check_type(type: Any, where: str) -> None:
    if not isinstance(type, str) or not type:
        raise CrontickError(f"{where}: expected a non-empty job type, got: {type!r}")


def _check_options(where: str, run_after: datetime | None, max_attempts: int | None) -> None:
    if max_attempts is not None and max_attempts < 1:
        raise CrontickError(f"{where}: expected max_attempts >= 1, got: {max_attempts}")
    if run_after is not None and run_after.tzinfo is None:
        raise CrontickError(f"{where}: expected a timezone-aware run_after, got naive {run_after.isoformat()}")


def enqueue(
    conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any],
    type: str,
    payload: Any,
    *,
    run_after: datetime | None = None,
    max_attempts: int | None = None,
    key: str | None = None,
) -> Any:
    """Add a job inside the caller's transaction and return its id (awaitable for an AsyncConnection).

    With `key`, a job already pending or running with that key is kept and its id returned.
    """
    params = _insert_params(type, payload, run_after, max_attempts, key)
    if isinstance(conn, psycopg.AsyncConnection):
        return _enqueue_async(conn, params)
    row = conn.execute(query("job_insert"), params).fetchone()
    if row is None:  # lost a race on the key to a transaction that committed mid-statement
        row = conn.execute(query("job_insert"), params).fetchone()
    return _job_id(row, params)


async def _enqueue_async(conn: psycopg.AsyncConnection[Any], params: dict[str, Any]) -> int:
    cur = await conn.execute(query("job_insert"), params)
    row = await cur.fetchone()
    if row is None:
        cur = await conn.execute(query("job_insert"), params)
        row = await cur.fetchone()
    return _job_id(row, params)


def _job_id(row: Any, params: dict[str, Any]) -> int:
    if row is None:
        raise CrontickError(
            f"enqueue({params['type']!r}): expected a job id, got none (key {params['key']!r} contended)"
        )
    return int(row[0])


def enqueue_many(
    conn: psycopg.Connection[Any],
    jobs: Iterable[tuple[str, Any]],
    *,
    run_after: datetime | None = None,
    max_attempts: int | None = None,
) -> list[int]:
    """Add many (type, payload) jobs in one statement; returns their ids in order."""
    _check_options("enqueue_many", run_after, max_attempts)
    rows = jobs if isinstance(jobs, list) else list(jobs)
    for type, _ in rows:
        if not isinstance(type, str) or not type:
            _check_type(type, "enqueue_many")
    if not rows:
        return []
    # One JSON document for the whole list (each (type, payload) pair becomes an array),
    # serialised once in C, where a jsonb[] array would quote and escape every payload
    # separately (about 6x slower for 10,000 jobs).
    params = {"jobs": Jsonb(rows), "run_after": run_after, "max_attempts": max_attempts}
    return [r[0] for r in conn.execute(query("job_insert_many"), params, binary=True).fetchall()]


async def rescue_expired(conn: psycopg.AsyncConnection[Any], now: datetime) -> RescueCounts:
    cur = await conn.execute(query("job_rescue_expired"), {"now": now, "limit": RESCUE_LIMIT})
    row = await cur.fetchone()
    return RescueCounts(retried=row[0], failed=row[1]) if row else RescueCounts(0, 0)


class Claim(NamedTuple):
    jobs: list[Job]
    expired: bool  # some running job's lease has passed: rescue, then claim again
    now: datetime  # the claim's time: the one passed in, else the database's clock


class UndecodablePayload(NamedTuple):
    """A payload Python cannot decode (nested deeper than its recursion limit): its job fails, alone."""

    reason: str


# json.loads without its per-call set-up (most payloads are tiny): the decoder's own scanner.
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def decode_payload(text: str) -> Any:
    try:
        value, end = _scan_json(text, 0)
        if end == len(text):
            return value
        return json.loads(text)  # not one whole JSON value (cannot come from jsonb): json says why
    except StopIteration:
        return json.loads(text)
    except RecursionError:
        return UndecodablePayload(
            f"expected a payload Python can decode, got JSON nested deeper than "
            f"{sys.getrecursionlimit()} levels ({len(text)} characters)"
        )


async def claim(conn: psycopg.AsyncConnection[Any], now: datetime | None, limit: int, lease_seconds: float) -> Claim:
    """Claim and lease up to `limit` due jobs, and learn whether a rescue is needed, in one statement.

    `now` None: due and leased by the database's clock, whose time comes back in Claim.now.
    """
    params = {"now": now, "limit": limit, "lease": timedelta(seconds=lease_seconds)}
    cur = await conn.execute(query("job_claim_due"), params)
    row = await cur.fetchone()
    assert row is not None  # the statement always returns its one row
    return Claim(claimed_jobs(row[0]), row[1], row[2])


def claimed_jobs(batch: list[list[Any]] | None) -> list[Job]:
    """The jobs of a claim's JSON array of [id, type, payload, attempts, max_attempts, created_at,
    scheduled_for, schedule]."""
    if not batch:
        return []
    from .handlers import Job

    fromiso = datetime.fromisoformat
    return [
        Job(j[0], j[1], decode_payload(j[2]), j[3], j[4], fromiso(j[5]), j[6] and fromiso(j[6]), j[7], j[8])
        for j in batch
    ]


async def claim_due(
    conn: psycopg.AsyncConnection[Any], now: datetime | None, limit: int, lease_seconds: float
) -> list[Job]:
    return (await claim(conn, now, limit, lease_seconds)).jobs


class TickLog(NamedTuple):
    """The crontick_ticks row that the record statement writes along with the outcomes."""

    started_at: datetime
    source: str
    summary: dict[str, Any]  # the tick's JSON summary; its job counts are filled in by the statement
    claimed: int
    rescued: int
    next_other_at: datetime | None = None  # when reminders or slots are next due; the statement adds the jobs'


class Recorded(NamedTuple):
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


def _int_array(values: list[int]) -> str:
    """A PostgreSQL array literal (the statement casts it): psycopg dumps a list element by element in Python."""
    return "{" + ",".join(map(str, values)) + "}"


class Statement(NamedTuple):
    """A named query with its parameters, built before it is sent (crontick.drain builds one while another runs)."""

    name: str
    params: dict[str, Any]


async def record(
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
    statement = record_statement(outcomes, now, tick, claim_next=claim_next)
    return recorded(statement, await fetch_row(conn, statement))


def record_statement(
    outcomes: Sequence[Outcome],
    now: datetime,
    tick: TickLog | None = None,
    *,
    claim_next: tuple[int, float] | None = None,
) -> Statement:
    """record()'s statement. Succeeded attempts, most of a batch, go as two integer arrays (ids,
    claimed attempts) that the server reads without parsing; the others as one JSON array of rows."""
    done_ids: list[int] = []
    done_attempts: list[int] = []
    others: list[list[Any]] = []
    for o in outcomes:
        if o.status == "done" and o.attempts == o.claimed_attempt and o.last_error is None and not o.snoozed:
            done_ids.append(o.job_id)
            done_attempts.append(o.claimed_attempt)
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
    }
    if tick is not None:
        params.update(
            log=True,
            started_at=tick.started_at,
            source=tick.source,
            summary=Jsonb(tick.summary),
            jobs=Jsonb({"claimed": tick.claimed, "rescued": tick.rescued}),
            next_other_at=tick.next_other_at,
        )
    if claim_next is None:
        return Statement("job_record_outcomes", params)
    params.update(limit=claim_next[0], lease=timedelta(seconds=claim_next[1]))
    return Statement("job_record_and_claim", params)


async def fetch_row(conn: psycopg.AsyncConnection[Any], statement: Statement) -> tuple[Any, ...]:
    """Run a statement that answers one row, and return that row as it came (decoding is the caller's)."""
    cur = await conn.execute(query(statement.name), statement.params)
    row: tuple[Any, ...] | None = await cur.fetchone()
    assert row is not None  # the statements run this way always return their one row
    return row


def recorded(statement: Statement, row: tuple[Any, ...]) -> Recorded:
    """The counts of a record statement's row, and the batch it claimed, if it claimed one."""
    if statement.name == "job_record_outcomes":
        return Recorded(set(row[0]), *row[1:])
    return Recorded(set(row[0]), *row[1:10])._replace(next_claim=Claim(claimed_jobs(row[10]), row[11], row[12]))


async def record_outcomes(conn: psycopg.AsyncConnection[Any], outcomes: Sequence[Outcome], now: datetime) -> set[int]:
    """Write every outcome in one statement; returns the ids written (the rest were fenced off)."""
    if not outcomes:
        return set()
    return (await record(conn, outcomes, now)).written
