"""The job queue's SQL operations: enqueue, rescue, claim and record, one statement each."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from .db import query
from .errors import CrontickError
from .handlers import Job

STATUSES = ("pending", "running", "done", "failed")
RESCUE_LIMIT = 1000


@dataclass(frozen=True)
class Outcome:
    """How one claimed attempt ended, as the record statement writes it."""

    job_id: int
    claimed_attempt: int
    status: str  # done | failed | pending (retry, or released unstarted)
    attempts: int
    run_after: datetime | None = None
    last_error: str | None = None


@dataclass(frozen=True)
class RescueCounts:
    retried: int
    failed: int

    @property
    def total(self) -> int:
        return self.retried + self.failed


def _insert_params(
    type: str, payload: Any, run_after: datetime | None, max_attempts: int | None, key: str | None
) -> dict[str, Any]:
    if not isinstance(type, str) or not type:
        raise CrontickError(f"enqueue: expected a non-empty job type, got: {type!r}")
    if max_attempts is not None and max_attempts < 1:
        raise CrontickError(f"enqueue({type!r}): expected max_attempts >= 1, got: {max_attempts}")
    if run_after is not None and run_after.tzinfo is None:
        raise CrontickError(f"enqueue({type!r}): expected a timezone-aware run_after, got naive {run_after.isoformat()}")
    return {"type": type, "payload": Jsonb(payload), "run_after": run_after, "max_attempts": max_attempts, "key": key}


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
        raise CrontickError(f"enqueue({params['type']!r}): expected a job id, got none (key {params['key']!r} contended)")
    return int(row[0])


def enqueue_many(
    conn: psycopg.Connection[Any],
    jobs: Iterable[tuple[str, Any]],
    *,
    run_after: datetime | None = None,
    max_attempts: int | None = None,
) -> list[int]:
    """Add many (type, payload) jobs in one statement; returns their ids in order."""
    types: list[str] = []
    payloads: list[Jsonb] = []
    for type, payload in jobs:
        _insert_params(type, payload, run_after, max_attempts, None)
        types.append(type)
        payloads.append(Jsonb(payload))
    if not types:
        return []
    params = {
        "types": types,
        "payloads": payloads,
        "run_afters": [run_after] * len(types),
        "max_attempts": [max_attempts] * len(types),
    }
    return [int(r[0]) for r in conn.execute(query("job_insert_many"), params).fetchall()]


async def rescue_expired(conn: psycopg.AsyncConnection[Any], now: datetime) -> RescueCounts:
    cur = await conn.execute(query("job_rescue_expired"), {"now": now, "limit": RESCUE_LIMIT})
    row = await cur.fetchone()
    return RescueCounts(retried=row[0], failed=row[1]) if row else RescueCounts(0, 0)


async def claim_due(
    conn: psycopg.AsyncConnection[Any], now: datetime, limit: int, lease_seconds: float
) -> list[Job]:
    params = {"now": now, "limit": limit, "lease_until": now + timedelta(seconds=lease_seconds)}
    cur = await conn.execute(query("job_claim_due"), params)
    return [
        Job(id=r[0], type=r[1], payload=r[2], attempt=r[3], max_attempts=r[4], created_at=r[5])
        for r in await cur.fetchall()
    ]


async def record_outcomes(conn: psycopg.AsyncConnection[Any], outcomes: Sequence[Outcome], now: datetime) -> set[int]:
    """Write every outcome in one statement; returns the ids written (the rest were fenced off)."""
    if not outcomes:
        return set()
    params = {
        "now": now,
        "ids": [o.job_id for o in outcomes],
        "claimed_attempts": [o.claimed_attempt for o in outcomes],
        "statuses": [o.status for o in outcomes],
        "attempts": [o.attempts for o in outcomes],
        "run_afters": [o.run_after for o in outcomes],
        "errors": [o.last_error for o in outcomes],
    }
    cur = await conn.execute(query("job_record_outcomes"), params)
    return {r[0] for r in await cur.fetchall()}


