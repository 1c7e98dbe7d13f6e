"""Claim: lease a batch of due jobs in one statement, and rescue the jobs whose lease expired."""

from __future__ import annotations

from collections.abc import Sequence
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
    """A claim's row: crontick_job_claim_due's columns, by name and in order (tests/tick/test_claim_rows.py)."""

    jobs: list[Job]
    leases_expired: bool  # some running job's lease has passed: rescue, then claim again
    now: datetime  # the claim's time: the one passed in, else the database's clock
    throttled_until: datetime | None = None  # an exhausted rate limit held back due jobs: when it reopens
    expired: int = 0  # pending jobs past their start_by that the same statement ended `cancelled`


def claim_of(row: Sequence[Any], at: int = 0) -> Claim:
    """The Claim in `row`, a claim's columns from column `at` on (record_and_claim's row ends with them).

    Only Claim's own columns are read: a column a later release adds after them changes nothing here.
    """
    return Claim(claimed_jobs(row[at]), *row[at + 1 : at + len(Claim._fields)])


# Each claimed job, as crontick_job_claim_due returns it: a JSON array of these jobs columns, in this
# order (one value to decode instead of ten per job). claimed_jobs reads each by its name's place
# here, and tests/tick/test_claim_rows.py holds both of the function's bodies to this list. A new
# column goes at the end: a process that does not know it reads the ones before it as before.
CLAIMED_COLUMNS = (
    "id", "type", "payload", "attempts", "max_attempts", "created_at", "scheduled_for", "schedule", "snoozes",
    "payloads", "traceparent",
)  # fmt: skip
# Each column's place in that array, found by its name.
_ID, _TYPE, _PAYLOAD, _ATTEMPTS, _MAX_ATTEMPTS, _CREATED_AT, _SCHEDULED_FOR, _SCHEDULE, _SNOOZES = map(
    CLAIMED_COLUMNS.index,
    ("id", "type", "payload", "attempts", "max_attempts", "created_at", "scheduled_for", "schedule", "snoozes"),
)
# The columns a claim by an older function may lack (each added at the end): read only when the array has them.
_PAYLOADS, _TRACEPARENT = CLAIMED_COLUMNS.index("payloads"), CLAIMED_COLUMNS.index("traceparent")


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
    return claim_of(row)


def claimed_jobs(batch: list[list[Any]] | None) -> list[Job]:
    """The jobs of a claim's JSON array, each an array of CLAIMED_COLUMNS.

    `payloads` (a debounced job's merged payloads, as JSON text, null when it merged nothing): a
    claim without it (an older function's) reads as a job that merged nothing. `traceparent` (its
    enqueuer's, null unless the app traced): a claim without it reads as a job enqueued outside a trace.
    """
    if not batch:
        return []
    fromiso = datetime.fromisoformat
    return [
        Job(
            j[_ID], j[_TYPE], decode_payload(j[_PAYLOAD]), j[_ATTEMPTS], j[_MAX_ATTEMPTS], fromiso(j[_CREATED_AT]),
            j[_SCHEDULED_FOR] and fromiso(j[_SCHEDULED_FOR]), j[_SCHEDULE], j[_SNOOZES],
            decode_payload(j[_PAYLOADS]) if len(j) > _PAYLOADS and j[_PAYLOADS] is not None else None,
            j[_TRACEPARENT] if len(j) > _TRACEPARENT else None,
        )
        for j in batch
    ]  # fmt: skip


async def claim_due(
    conn: psycopg.AsyncConnection[Any], now: datetime | None, limit: int, lease_seconds: float
) -> list[Job]:
    """claim_batch's jobs only (those a claim expires are not counted: a tick's claims go through claim_batch)."""
    return (await claim_batch(conn, now, limit, lease_seconds)).jobs
