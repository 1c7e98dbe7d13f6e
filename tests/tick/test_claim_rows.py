"""The claim's row shapes, declared once in crontick.tick.claim: Claim is crontick_job_claim_due's row, and
CLAIMED_COLUMNS each claimed job's array, in both of the function's bodies; claimed_jobs reads each column
by its name."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from crontick import db, enqueue
from crontick.tick.claim import CLAIMED_COLUMNS, Claim, claim_batch, claimed_jobs
from tests.support.sql_rows import function_text, output_columns

# Job's attributes by the jobs column each is read from (the two whose names differ, and the rest as they are).
JOB_ATTRIBUTE = {"attempts": "attempt", "payloads": "merged_payloads"}


def test_claim_is_the_functions_row(conn: psycopg.Connection[Any]) -> None:
    assert output_columns(conn, "crontick_job_claim_due") == Claim._fields


def _between(text: str, start: str, end: str) -> list[str]:
    return [" ".join(m.split()) for m in re.findall(re.escape(start) + r"(.*?)" + re.escape(end), text, re.S)]


def test_both_bodies_return_each_job_as_an_array_of_claimed_columns() -> None:
    text = function_text("job_claim_due")
    arrays = _between(text, "json_agg(json_build_array(", ")\n        order by c.id)")
    returned = _between(text, "returning ", "\n")
    assert len(arrays) == len(returned) == 2  # the plain claim and the one with flow control
    for array in arrays:
        assert [re.sub(r"^c\.|::text$", "", c.strip()) for c in array.split(",")] == list(CLAIMED_COLUMNS)
    for columns in returned:
        assert [c.strip().removeprefix("j.") for c in columns.split(",")] == list(CLAIMED_COLUMNS)


def test_claimed_jobs_reads_each_column_by_name(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = enqueue(conn, "t_core.ok", {"n": 1}, max_attempts=7)
    conn.execute(
        "update jobs set scheduled_for = created_at - interval '1 hour', schedule = 'nightly', snoozes = 3,"
        " payloads = %s, attempts = 2, traceparent = %s where id = %s",
        [Jsonb([{"n": 0}, {"n": 1}]), "00-" + "a" * 32 + "-" + "b" * 16 + "-01", job_id],
    )

    async def claim() -> Claim:
        aconn = await db.connect(database_url)
        try:
            return await claim_batch(aconn, datetime.now(UTC) + timedelta(seconds=5), 10, 30)
        finally:
            await aconn.close()

    (job,) = asyncio.run(claim()).jobs
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute("select * from jobs where id = %s", [job_id]).fetchone()
    assert row is not None and row["attempts"] == 3 and row["max_attempts"] == 7 and row["schedule"] == "nightly"
    for column in CLAIMED_COLUMNS:
        assert getattr(job, JOB_ATTRIBUTE.get(column, column)) == row[column], column


def test_a_claim_from_an_older_function_without_payloads_reads_as_nothing_merged() -> None:
    created = "2026-01-05T09:00:00+00:00"
    older = [[5, "t", '{"a": 1}', 1, 4, created, None, None, 0]]
    (job,) = claimed_jobs(older)
    assert (job.id, job.payload, job.merged_payloads, job.payloads) == (5, {"a": 1}, None, [{"a": 1}])
    # and a later one with a column after payloads reads the same as today's
    traceparent = "00-" + "1" * 32 + "-" + "2" * 16 + "-01"
    (later,) = claimed_jobs([[*older[0], '[{"a": 0}, {"a": 1}]', traceparent, "a column added at the end"]])
    assert later._replace(merged_payloads=None, traceparent=None) == job
    assert later.merged_payloads == [{"a": 0}, {"a": 1}] and later.traceparent == traceparent


def test_a_claim_from_an_older_function_without_traceparent_reads_as_enqueued_outside_a_trace() -> None:
    older = [[5, "t", '{"a": 1}', 1, 4, "2026-01-05T09:00:00+00:00", None, None, 0, '[{"a": 1}]']]
    (job,) = claimed_jobs(older)
    assert job.traceparent is None and job.merged_payloads == [{"a": 1}]
