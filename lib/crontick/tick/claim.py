"""Claim: lease a batch of due jobs in one statement, and rescue the jobs whose lease expired."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, NamedTuple

import psycopg

from crontick.db import query
from crontick.flow.claim_args import claim_flow
from crontick.jobs.job import Job, decode_payload

RESCUE_LIMIT = 1000


class RescueCounts(NamedTuple):
    retried: int
    failed: int

    @property
    def total(self) -> int:
        return self.retried + self.failed


async def rescue_expired(conn: psycopg.AsyncConnection[Any], now: datetime) -> RescueCounts:
    cur = await conn.execute(query("job_rescue_expired"), {"now": now, "limit": RESCUE_LIMIT})
    row = await cur.fetchone()
    return RescueCounts(retried=row[0], failed=row[1]) if row else RescueCounts(0, 0)


class Claim(NamedTuple):
    jobs: list[Job]
    expired: bool  # some running job's lease has passed: rescue, then claim again
    now: datetime  # the claim's time: the one passed in, else the database's clock
    throttled_until: datetime | None = None  # an exhausted rate limit held back due jobs: when it reopens


async def claim_batch(
    conn: psycopg.AsyncConnection[Any], now: datetime | None, limit: int, lease_seconds: float
) -> Claim:
    """Claim and lease up to `limit` due jobs, and learn whether a rescue is needed, in one statement.

    `now` None: due and leased by the database's clock, whose time comes back in Claim.now.
    """
    params = {"now": now, "limit": limit, "lease": timedelta(seconds=lease_seconds), "flow": claim_flow()}
    cur = await conn.execute(query("job_claim_due"), params)
    row = await cur.fetchone()
    assert row is not None  # the statement always returns its one row
    return Claim(claimed_jobs(row[0]), row[1], row[2], row[3])


def claimed_jobs(batch: list[list[Any]] | None) -> list[Job]:
    """The jobs of a claim's JSON array of [id, type, payload, attempts, max_attempts, created_at,
    scheduled_for, schedule, snoozes, payloads].

    `payloads` (a debounced job's merged payloads, as JSON text, null when it merged nothing) is the
    tenth element; a claim without it (nine) reads as a job that merged nothing.
    """
    if not batch:
        return []
    fromiso = datetime.fromisoformat
    return [
        Job(
            j[0], j[1], decode_payload(j[2]), j[3], j[4], fromiso(j[5]), j[6] and fromiso(j[6]), j[7], j[8],
            decode_payload(j[9]) if len(j) > 9 and j[9] is not None else None,
        )
        for j in batch
    ]  # fmt: skip


async def claim_due(
    conn: psycopg.AsyncConnection[Any], now: datetime | None, limit: int, lease_seconds: float
) -> list[Job]:
    return (await claim_batch(conn, now, limit, lease_seconds)).jobs
