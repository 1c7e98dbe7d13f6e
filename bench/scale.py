"""Flat at scale: the median time to claim 100 jobs, with an empty history and with a big one; and, over the
big one, with flow control in use (a rate limit declared, the due jobs spread over 10,000 groups)."""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from crontick import db
from crontick.jobs.job import Job, Outcome
from crontick.tick.claim import claim_due, claimed_jobs
from crontick.tick.record import TickLog, record_batch

from . import explain as explain_nested
from .noop import JOB_TYPE

DUE_JOBS = 10_000
CLAIMS = 40
BATCH = 100
LEASE_SECONDS = 60.0

# Bench set-up only: rows made in the server, not through crontick (a million round trips would
# measure the loader, not the claim).
INSERT_DONE = """
insert into jobs (type, payload, status, attempts, run_after, created_at, updated_at, finished_at)
select %(type)s, jsonb_build_object('i', g), 'done', 1, t, t, t, t
from generate_series(1, %(n)s) g, lateral (select now() - interval '30 days' + g * interval '2 seconds' as t) x
"""
INSERT_FUTURE = """
insert into jobs (type, payload, run_after)
select %(type)s, jsonb_build_object('i', g), now() + interval '1 hour' + g * interval '1 second'
from generate_series(1, %(n)s) g
"""
INSERT_DUE = """
insert into jobs (type, payload, run_after)
select %(type)s, jsonb_build_object('i', g), now() - interval '1 hour' + g * interval '1 millisecond'
from generate_series(1, %(n)s) g
"""


# Flow control's case (issue 20): the due jobs in 10,000 groups (three each), and the claim given a
# rate limit on their type, wide enough never to throttle, so the claim takes its flow-control path.
GROUPS = 10_000
INSERT_GROUPED = """
insert into jobs (type, payload, run_after, group_key)
select %(type)s, jsonb_build_object('i', g), now() - interval '1 hour' + g * interval '1 millisecond', 'g' || (g %% %(groups)s)
from generate_series(1, %(n)s) g
"""
FLOW = {"limits": [{"name": "bench", "count": 1_000_000_000, "seconds": 60, "types": [JOB_TYPE]}], "wide": []}


def load(url: str, done: int, future: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        if done:
            conn.execute(INSERT_DONE, {"type": JOB_TYPE, "n": done})
        if future:
            conn.execute(INSERT_FUTURE, {"type": JOB_TYPE, "n": future})
        conn.execute(INSERT_DUE, {"type": JOB_TYPE, "n": DUE_JOBS})
        conn.execute("vacuum analyze jobs")


def load_grouped(url: str) -> None:
    """The flow case's due jobs: replace the plain ones with DUE_JOBS * 3 spread over GROUPS groups."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("delete from jobs where status = 'pending'")
        conn.execute(INSERT_GROUPED, {"type": JOB_TYPE, "n": 3 * GROUPS, "groups": GROUPS})
        conn.execute("vacuum analyze jobs")


async def _flow_claim(conn: psycopg.AsyncConnection[Any], now: datetime) -> list[Job]:
    params = {"now": now, "limit": BATCH, "lease": timedelta(seconds=LEASE_SECONDS), "flow": Jsonb(FLOW)}
    cur = await conn.execute(db.query("job_claim_due"), params)
    row = await cur.fetchone()
    assert row is not None
    return claimed_jobs(row[0])


async def claim_times(url: str, flow: bool = False) -> tuple[list[float], list[float], str]:
    """Claim 100 at a time, then record them done with a tick log row, as a tick would; each timed.
    Then EXPLAIN one more claim. `flow`: the claim with a rate limit (its flow-control path)."""
    conn = await db.connect(url)
    try:
        claims, records = [], []
        for _ in range(CLAIMS):
            now = datetime.now(UTC)
            began = time.perf_counter()
            jobs = await _flow_claim(conn, now) if flow else await claim_due(conn, now, BATCH, LEASE_SECONDS)
            claimed = time.perf_counter()
            outcomes = [Outcome(j.id, j.attempt, "done", j.attempt) for j in jobs]
            await record_batch(conn, outcomes, now, TickLog(now, "bench", {}, len(jobs), 0))
            claims.append((claimed - began) * 1000)
            records.append((time.perf_counter() - claimed) * 1000)
        return claims, records, await explain(conn, flow)
    finally:
        await conn.close()


async def idle_claim_times(url: str) -> list[float]:
    """The claim of a tick that finds nothing due (its due jobs deleted first): each of CLAIMS timed.
    Over the big history it still has the future jobs, which such a claim must not read."""
    with psycopg.connect(url, autocommit=True) as setup:
        setup.execute("delete from jobs where status = 'pending' and run_after <= now()")
    conn = await db.connect(url)
    try:
        claims = []
        for _ in range(CLAIMS):
            began = time.perf_counter()
            jobs = await claim_due(conn, datetime.now(UTC), BATCH, LEASE_SECONDS)
            claims.append((time.perf_counter() - began) * 1000)
            if jobs:
                raise RuntimeError(f"expected an idle claim, got: {len(jobs)} jobs")
        return claims
    finally:
        await conn.close()


async def explain(conn: psycopg.AsyncConnection[Any], flow: bool = False) -> str:
    """The plan of the claim function's statement (bench.explain); EXPLAIN of the call where auto_explain is missing."""
    now = datetime.now(UTC)
    params = {
        "now": now,
        "limit": BATCH,
        "lease": timedelta(seconds=LEASE_SECONDS),
        "flow": Jsonb(FLOW) if flow else None,
    }
    try:
        plans = await explain_nested.nested_plans(conn, db.query("job_claim_due"), params)
    except psycopg.Error:
        plans = []
    claim_plans = [p for p in plans if "jobs_pending_claim" in p or "Update on jobs" in p]
    if claim_plans:
        return claim_plans[0]
    if plans:
        return plans[0]
    statement = sql.SQL("explain (analyze, buffers) ") + sql.SQL(db.query("job_claim_due"))
    async with conn.transaction(force_rollback=True):
        cur = await conn.execute(statement, params)
        return "\n".join(row[0] for row in await cur.fetchall())


async def measure(empty_url: str, full_url: str, history_done: int, history_future: int) -> dict[str, Any]:
    load(empty_url, 0, 0)
    load(full_url, history_done, history_future)
    empty_claims, empty_records, empty_plan = await claim_times(empty_url)
    full_claims, full_records, full_plan = await claim_times(full_url)
    empty_ms, full_ms = statistics.median(empty_claims), statistics.median(full_claims)
    idle_empty_ms = statistics.median(await idle_claim_times(empty_url))
    idle_full_ms = statistics.median(
        await idle_claim_times(full_url)
    )  # before load_grouped, which drops the future jobs
    load_grouped(full_url)
    flow_claims, _, flow_plan = await claim_times(full_url, flow=True)
    flow_ms = statistics.median(flow_claims)
    return {
        # Nothing due: the claim over an empty queue, and over the history's future jobs.
        "idle_empty_median_ms": round(idle_empty_ms, 3),
        "idle_history_median_ms": round(idle_full_ms, 3),
        "idle_ratio": round(idle_full_ms / idle_empty_ms, 2),
        # Flow control: a rate limit declared, the due jobs in GROUPS groups, over the same history.
        "flow_groups": GROUPS,
        "flow_median_ms": round(flow_ms, 3),
        "flow_ratio": round(flow_ms / full_ms, 2),  # against the plain claim over the same history
        "flow_ratio_empty": round(flow_ms / empty_ms, 2),
        "explain_flow": flow_plan,
        "claims_per_case": CLAIMS,
        "due_jobs": DUE_JOBS,
        "history_done": history_done,
        "history_future": history_future,
        "empty_median_ms": round(empty_ms, 3),
        "history_median_ms": round(full_ms, 3),
        "ratio": round(full_ms / empty_ms, 2),
        # The tick's other job statement, for the same batches: recording outcomes and the log row.
        "record_empty_median_ms": round(statistics.median(empty_records), 3),
        "record_history_median_ms": round(statistics.median(full_records), 3),
        "explain_empty": empty_plan,
        "explain_history": full_plan,
    }
