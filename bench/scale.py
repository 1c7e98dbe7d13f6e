"""Flat at scale: the median time to claim 100 jobs, with an empty history and with a big one."""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql

from crontick import db, queue

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


def load(url: str, done: int, future: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        if done:
            conn.execute(INSERT_DONE, {"type": JOB_TYPE, "n": done})
        if future:
            conn.execute(INSERT_FUTURE, {"type": JOB_TYPE, "n": future})
        conn.execute(INSERT_DUE, {"type": JOB_TYPE, "n": DUE_JOBS})
        conn.execute("vacuum analyze jobs")


async def claim_times(url: str) -> tuple[list[float], list[float], str]:
    """Claim 100 at a time, then record them done with a tick log row, as a tick would; each timed.
    Then EXPLAIN one more claim."""
    conn = await db.connect(url)
    try:
        claims, records = [], []
        for _ in range(CLAIMS):
            now = datetime.now(UTC)
            began = time.perf_counter()
            jobs = await queue.claim_due(conn, now, BATCH, LEASE_SECONDS)
            claimed = time.perf_counter()
            outcomes = [queue.Outcome(j.id, j.attempt, "done", j.attempt) for j in jobs]
            await queue.record(conn, outcomes, now, queue.TickLog(now, "bench", {}, len(jobs), 0))
            claims.append((claimed - began) * 1000)
            records.append((time.perf_counter() - claimed) * 1000)
        return claims, records, await explain(conn)
    finally:
        await conn.close()


async def explain(conn: psycopg.AsyncConnection[Any]) -> str:
    """The plan of the claim function's statement (bench.explain); EXPLAIN of the call where auto_explain is missing."""
    now = datetime.now(UTC)
    params = {"now": now, "limit": BATCH, "lease": timedelta(seconds=LEASE_SECONDS)}
    try:
        plans = await explain_nested.nested_plans(conn, db.query("job_claim_due"), params)
    except psycopg.Error:
        plans = []
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
    return {
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
