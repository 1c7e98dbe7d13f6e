"""Per-type durations (the admin's p50/p95, crontick_job_duration_seconds_last_hour) count each attempt's own run
time: the record statement gets it from the runner (crontick.tick.record, sql/migrations/0047_record_run_times.sql),
so a batch's quick job is not counted at its batch's time, the claim to the record."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Json

import crontick
from crontick.admin.overview import figures
from tests.support.core_jobs import db_now, settings_for, tick


@crontick.handler("t_runtime.sleep")
async def sleeps(payload: Any, job: crontick.Job) -> None:
    await asyncio.sleep(payload["seconds"])


def _buckets(conn: psycopg.Connection[Any], type: str) -> dict[int, int]:
    rows = conn.execute(
        "select bucket, sum(done + failed + retried)::int from crontick_type_minutes where type = %s group by 1",
        (type,),
    ).fetchall()
    return {bucket: n for bucket, n in rows if n}


@pytest.mark.parametrize("slow_job_seconds", [60.0, 0.3], ids=["all succeeded", "one slow (the general path)"])
def test_a_batch_of_a_quick_and_a_slow_job_counts_each_at_its_own_time(
    database_url: str, conn: psycopg.Connection[Any], slow_job_seconds: float
) -> None:
    crontick.enqueue(conn, "t_runtime.sleep", {"seconds": 0})
    crontick.enqueue(conn, "t_runtime.sleep", {"seconds": 0.6})
    settings = settings_for(
        database_url, time_budget_seconds=5.0, lease_seconds=40.0, slow_job_seconds=slow_job_seconds
    )
    assert tick(database_url, settings, now=db_now(conn)).jobs.succeeded == 2
    buckets = _buckets(conn, "t_runtime.sleep")
    assert sum(buckets.values()) == 2 and len(buckets) == 2  # two durations, not the batch's once for both
    p50, p95 = figures.percentile(buckets, 0.5), figures.percentile(buckets, 0.95)
    assert p50 is not None and p50 < 100  # the quick one: its handler's time, not the 600 ms it waited for the slow
    assert p95 is not None and 400 < p95 < 1000  # the slow one


RECORD_AND_CLAIM = """
select written from crontick_job_record_and_claim(%(now)s, %(ids)s, %(attempts)s, %(others)s, false, null, null, null,
    null, null, 0, interval '30 seconds', null {ms})
"""


@pytest.mark.parametrize("sent", [True, False], ids=["run times sent", "a previous release's call"])
def test_the_drains_record_and_claim_counts_the_run_times_it_is_sent(conn: psycopg.Connection[Any], sent: bool) -> None:
    """crontick_job_record_and_claim (crontick tick --drain) passes them on; a call without them (a previous
    release's, during a rolling deploy) still records, each attempt then counted at its batch's time."""
    now = db_now(conn)
    conn.execute(
        "insert into jobs (type, payload, run_after) select 't_runtime.sql', '{}', %(at)s from generate_series(1, 3)",
        {"at": now - timedelta(seconds=3)},
    )
    claimed = conn.execute(
        "select jobs from crontick_job_claim_due(%(at)s, 3, interval '30 seconds')", {"at": now - timedelta(seconds=2)}
    ).fetchone()
    assert claimed is not None
    ids = sorted(job[0] for job in claimed[0])
    # Two succeeded (2 ms and 300 ms), one failed at 40 ms (the general path's JSON row, its run time last).
    others = [[ids[2], 1, "failed", 1, None, "boom", False, None, None, False, False, *([40.0] if sent else [])]]
    params = {"now": now, "ids": ids[:2], "attempts": [1, 1], "others": Json(others), "ms": [2.0, 300.0]}
    sql = RECORD_AND_CLAIM.format(ms=", %(ms)s::double precision[]" if sent else "")
    row = conn.execute(sql, params).fetchone()
    assert row is not None and sorted(row[0]) == ids
    buckets = _buckets(conn, "t_runtime.sql")
    if sent:
        assert buckets == {2: 1, 10: 1, 16: 1}  # floor(2 * log2(ms)): 2 ms, 40 ms, 300 ms
    else:
        assert buckets == {21: 3}  # the claim (2 s before) to the record, for all three
