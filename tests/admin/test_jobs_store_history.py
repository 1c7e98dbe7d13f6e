"""The attempts history: written by the tick's own outcome and rescue statements, scrubbed, capped, kept on retry.

Read as the admin reads it (admin_job_attempts): since migration 0010 the attempt that finishes a
job well is the done job's own row, not a job_attempts row.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row

import crontick
from crontick import db
from crontick.admin.jobs import store
from crontick.jobs.job import Outcome
from crontick.tick.claim import claim_batch, rescue_expired
from crontick.tick.record import record_outcomes
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import db_now, job_row, tick


@crontick.handler("t_history.flaky")
async def flaky(payload: Any, job: crontick.Job) -> None:
    if job.attempt == 1:
        raise RuntimeError("the first attempt fails")


def history(conn: psycopg.Connection[Any], job_id: int) -> list[dict[str, Any]]:
    cur = conn.cursor(row_factory=dict_row)
    return cur.execute(db.query("admin_job_attempts"), {"id": job_id}).fetchall()


def stored(conn: psycopg.Connection[Any], job_id: int) -> list[tuple[int, str]]:
    """The job's job_attempts rows themselves, (attempt, outcome)."""
    rows = conn.execute(
        "select attempt, outcome from job_attempts where job_id = %(id)s order by id", {"id": job_id}
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def add(conn: psycopg.Connection[Any], type: str, max_attempts: int = 4) -> int:
    row = conn.execute(
        "insert into jobs (type, payload, max_attempts) values (%(t)s, '{}', %(m)s) returning id",
        {"t": type, "m": max_attempts},
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_each_outcome_is_one_attempt_row_and_a_secret_never_reaches_it(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ok, leaky = add(conn, "t_core.ok"), add(conn, "t_core.leaks_secret")
    now = db_now(conn)
    tick(database_url, now=now)
    [done] = history(conn, ok)
    assert (done["attempt"], done["outcome"], done["error"], done["started_at"]) == (1, "succeeded", None, now)
    assert done["finished_at"] >= now
    [failed] = history(conn, leaky)
    assert failed["outcome"] == "retried" and "[redacted]" in failed["error"] and TEST_SECRET not in failed["error"]
    # The success is the done job's row (0010: no job_attempts row per succeeded attempt); the retry is stored.
    assert stored(conn, ok) == [] and stored(conn, leaky) == [(1, "retried")]


def test_a_released_job_made_no_attempt_and_a_rescued_one_did(database_url: str, conn: psycopg.Connection[Any]) -> None:
    released, rescued = add(conn, "t_core.ok"), add(conn, "t_core.ok")
    now = db_now(conn)

    async def go() -> None:
        c = await db.connect(database_url)
        try:
            claim = await claim_batch(c, now, 10, 60)
            assert sorted(j.id for j in claim.jobs) == [released, rescued]
            # The budget ran out before `released` started: its attempt is handed back.
            await record_outcomes(c, [Outcome(released, 1, "pending", 0, now)], now)
            await c.execute("update jobs set locked_until = %(t)s where id = %(id)s", {"t": now, "id": rescued})
            assert (await rescue_expired(c, now + timedelta(seconds=1))).retried == 1
        finally:
            await c.close()

    asyncio.run(go())
    assert history(conn, released) == []
    [lost] = history(conn, rescued)
    assert (lost["attempt"], lost["outcome"], lost["started_at"], lost["finished_at"]) == (1, "lease_expired", now, now)
    assert lost["error"].startswith("LeaseExpired: attempt 1 of 4")


def test_retry_keeps_history_and_attempts_and_deleting_the_job_deletes_its_history(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = add(conn, "t_core.permanent")
    tick(database_url, now=db_now(conn))
    assert job_row(conn, job_id)["status"] == "failed"

    async def act() -> store.ActionResult:
        c = await db.connect(database_url)
        try:
            result = await store.retry_job(c, job_id, role="admin")
            job = await store.get_job(c, job_id)
            assert job is not None and len(job["history"]) == 1
            return result
        finally:
            await c.close()

    result = asyncio.run(act())
    assert result.ok and result.row is not None
    assert (result.row["attempts"], result.row["max_attempts"]) == (1, 4)
    tick(database_url, now=db_now(conn))
    assert [(h["attempt"], h["outcome"]) for h in history(conn, job_id)] == [(1, "failed"), (2, "failed")]
    other = add(conn, "t_core.permanent")
    tick(database_url, now=db_now(conn))
    conn.execute("delete from jobs where id = %(id)s", {"id": job_id})
    # Its history goes with it (a trigger, since 0008 dropped the foreign key), and only its own.
    assert conn.execute("select job_id from job_attempts").fetchall() == [(other,)]
    conn.execute("truncate jobs")
    assert conn.execute("select count(*) from job_attempts").fetchone() == (0,)


def test_a_long_error_is_capped_in_the_history(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = add(conn, "t_core.ok")
    now = db_now(conn)

    async def go() -> None:
        c = await db.connect(database_url)
        try:
            await claim_batch(c, now, 10, 60)
            await record_outcomes(c, [Outcome(job_id, 1, "failed", 1, None, "x" * 10_000)], now)
        finally:
            await c.close()

    asyncio.run(go())
    [row] = history(conn, job_id)
    assert len(row["error"]) == 4096


def test_a_job_that_succeeds_after_a_retry_shows_both_attempts_in_order(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = add(conn, "t_history.flaky")
    first = db_now(conn)
    tick(database_url, now=first)
    conn.execute("update jobs set run_after = now() - interval '1 second' where id = %(id)s", {"id": job_id})
    second = db_now(conn)
    tick(database_url, now=second)
    assert job_row(conn, job_id)["status"] == "done"
    rows = history(conn, job_id)
    assert [(h["attempt"], h["outcome"], h["started_at"]) for h in rows] == [
        (1, "retried", first),
        (2, "succeeded", second),
    ]
    assert rows[1]["finished_at"] >= second and rows[1]["error"] is None
    assert stored(conn, job_id) == [(1, "retried")]


def test_retrying_a_done_job_keeps_its_success_in_the_history(database_url: str, conn: psycopg.Connection[Any]) -> None:
    one, bulk = add(conn, "t_core.ok"), add(conn, "t_core.ok")
    now = db_now(conn)
    tick(database_url, now=now)
    before = {job_id: history(conn, job_id) for job_id in (one, bulk)}
    assert [h["outcome"] for h in before[one]] == ["succeeded"] and stored(conn, one) == []

    async def act() -> None:
        c = await db.connect(database_url)
        try:
            assert (await store.retry_job(c, one, role="admin")).ok
            await c.execute(
                db.query("admin_jobs_bulk_retry"),
                {"status": "done", "after_id": one, "max_id": bulk, "payload": None, "chunk": 10, "type": None},
            )
        finally:
            await c.close()

    asyncio.run(act())
    for job_id in (one, bulk):
        assert job_row(conn, job_id)["status"] == "pending"
        assert history(conn, job_id) == before[job_id]  # copied into job_attempts, the same entry
        assert stored(conn, job_id) == [(1, "succeeded")]
    tick(database_url, now=db_now(conn))
    assert [(h["attempt"], h["outcome"]) for h in history(conn, one)] == [(1, "succeeded"), (2, "succeeded")]


def test_a_job_done_before_the_migration_shows_its_stored_success_once(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """Before 0010 every succeeded attempt had its job_attempts row, and those jobs have no started_at."""
    job_id = add(conn, "t_core.ok")
    now = db_now(conn)
    conn.execute(
        "update jobs set status = 'done', attempts = 1, finished_at = %(t)s, started_at = null where id = %(id)s",
        {"t": now, "id": job_id},
    )
    conn.execute(
        "insert into job_attempts (job_id, attempt, started_at, finished_at, outcome) "
        "values (%(id)s, 1, %(t)s, %(t)s, 'succeeded')",
        {"id": job_id, "t": now},
    )
    assert [(h["attempt"], h["outcome"]) for h in history(conn, job_id)] == [(1, "succeeded")]
    conn.execute("update jobs set started_at = %(t)s where id = %(id)s", {"t": now, "id": job_id})
    assert [(h["attempt"], h["outcome"]) for h in history(conn, job_id)] == [(1, "succeeded")]
