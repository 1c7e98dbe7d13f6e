"""Groups in the claim itself: a group's jobs behind its head are held (jobs.held, kept by triggers), so a
batch never takes two jobs of a group, the head of each group comes first, and the claim reads one
index entry per group however many jobs wait in it."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta
from typing import Any

import psycopg

from crontick import db
from crontick.jobs.job import Outcome
from crontick.tick.claim import claim_due
from crontick.tick.record import record_outcomes
from tests.support.core_jobs import db_now


def _claim(url: str, now: datetime, limit: int = 100) -> list[int]:
    async def go() -> list[int]:
        c = await db.connect(url)
        try:
            return [j.id for j in await claim_due(c, now, limit, 60)]
        finally:
            await c.close()

    return asyncio.run(go())


def _end(url: str, now: datetime, ids: list[int], status: str = "done") -> None:
    async def go() -> None:
        c = await db.connect(url)
        try:
            outcomes = [Outcome(i, 1, status, 1) for i in ids]
            assert await record_outcomes(c, outcomes, now) == set(ids)
        finally:
            await c.close()

    asyncio.run(go())


def _insert(conn: psycopg.Connection[Any], groups: list[str | None]) -> list[int]:
    rows = conn.execute(
        "insert into jobs (type, payload, group_key) select 't_flow.none', '{}', g"
        " from unnest(%(g)s::text[]) with ordinality as u(g, n) order by n returning id",
        {"g": groups},
    ).fetchall()
    return [r[0] for r in rows]


def _held(conn: psycopg.Connection[Any]) -> dict[int, bool]:
    """Each job's `held`: whether it may not start yet."""
    return {int(i): bool(h) for i, h in conn.execute("select id, held from jobs").fetchall()}


def test_a_group_runs_one_job_at_a_time_in_id_order_and_moves_on_past_a_failed_head(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    a1, a2, a3, free, b1 = _insert(conn, ["a", "a", "a", None, "b"])
    held = dict(conn.execute("select id, held from jobs").fetchall())
    assert held == {a1: False, a2: True, a3: True, free: False, b1: False}
    now = db_now(conn)
    assert sorted(_claim(database_url, now)) == [a1, free, b1]  # one of each group, and the ungrouped job
    assert _claim(database_url, now) == []  # a1 runs: the rest of its group waits
    _end(database_url, now, [a1], "failed")  # a failed head: the group moves on
    assert _claim(database_url, now) == [a2]
    # a2 back to pending for its retry, later: it keeps its place, a3 still waits.
    conn.execute(
        "update jobs set status = 'pending', locked_until = null, run_after = now() + interval '1 hour'"
        " where id = %(id)s",
        {"id": a2},
    )
    assert _claim(database_url, now) == []
    assert conn.execute("select held from jobs where id = %(id)s", {"id": a3}).fetchone() == (True,)
    conn.execute("update jobs set status = 'cancelled' where id = %(id)s", {"id": a2})  # an admin's cancel
    assert _claim(database_url, now) == [a3]


def test_an_insert_into_a_busy_group_is_held_and_an_admin_retry_of_an_earlier_job_takes_the_head_back(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    (a1,) = _insert(conn, ["a"])
    now = db_now(conn)
    assert _claim(database_url, now) == [a1]
    (a2,) = _insert(conn, ["a"])  # a plain INSERT while the head runs
    assert conn.execute("select held from jobs where id = %(id)s", {"id": a2}).fetchone() == (True,)
    _end(database_url, now, [a1], "failed")
    # The failed head is retried before a2 ran: it is the group's first unended job again, so a2 waits.
    conn.execute("update jobs set status = 'pending', run_after = now() where id = %(id)s", {"id": a1})
    assert dict(conn.execute("select id, held from jobs").fetchall()) == {a1: False, a2: True}
    assert _claim(database_url, now) == [a1]


def test_the_record_statement_settles_its_own_groups_and_a_later_update_in_its_transaction_is_noted(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """The record statement's rows skip the row trigger (sql/migrations/0022_record_settles_groups.sql) and
    it settles their groups itself; the setting that marks it ends with it, so an update after it in the
    same transaction (an admin's cancel) is noted and settled as any other."""
    a1, a2, b1, b2 = _insert(conn, ["a", "a", "b", "b"])
    now = db_now(conn)
    assert sorted(_claim(database_url, now)) == [a1, b1]
    with conn.transaction():
        conn.execute(
            "select * from crontick_job_record_outcomes(now(), array[%(a1)s]::bigint[], array[1], '[]'::json,"
            " false, now(), 'test', '{}'::jsonb, '{}'::jsonb, null)",
            {"a1": a1},
        )
        assert _held(conn)[a2] is False  # group a moved on, in the record's own transaction
        assert conn.execute("select current_setting('crontick.group_settle', true)").fetchone() == ("",)
        conn.execute("update jobs set status = 'cancelled', locked_until = null where id = %(b1)s", {"b1": b1})
    assert _held(conn) == {a1: False, a2: False, b1: False, b2: False}  # b's cancel was noted: b moved on too
    assert sorted(_claim(database_url, now)) == [a2, b2]


def test_deleting_a_pending_head_releases_the_next(database_url: str, conn: psycopg.Connection[Any]) -> None:
    a1, a2 = _insert(conn, ["a", "a"])
    conn.execute("delete from jobs where id = %(id)s", {"id": a1})
    assert _claim(database_url, db_now(conn)) == [a2]


def _tuples_read(conn: psycopg.Connection[Any], url: str, now: datetime, limit: int) -> tuple[int, int]:
    """(jobs claimed, index tuples the claim read) for one claim of `limit`."""

    def once() -> int:
        conn.execute("select pg_stat_force_next_flush()")  # this session's own reads, once it is idle
        time.sleep(0.2)
        conn.execute("select pg_stat_clear_snapshot()")
        row = conn.execute(
            "select coalesce(sum(idx_tup_read), 0) from pg_stat_user_indexes where relname = 'jobs'"
        ).fetchone()
        return int(row[0])  # type: ignore[index]

    def read() -> int:  # flushed statistics arrive late under load: read until they stand still
        last, now_ = -1, once()
        while now_ != last:
            last, now_ = now_, once()
        return now_

    before = read()

    async def go() -> int:
        c = await db.connect(url)
        try:
            got = len(await claim_due(c, now, limit, 60))
            await c.execute("select pg_stat_force_next_flush()")
            return got
        finally:
            await c.close()

    claimed = asyncio.run(go())
    return claimed, read() - before


def test_the_claim_reads_one_entry_per_group_with_100000_jobs_in_one_group_and_10000_groups(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(
        "insert into jobs (type, payload, group_key, run_after)"
        " select 't_flow.none', '{}', 'hot', now() - interval '1 hour' from generate_series(1, 100000)"
    )
    conn.execute(
        "insert into jobs (type, payload, group_key) select 't_flow.none', '{}', 'g' || (g % 10000)"
        " from generate_series(1, 30000) g"
    )
    conn.execute("analyze jobs")
    now = db_now(conn) + timedelta(seconds=1)
    claimed, read = _tuples_read(conn, database_url, now, 100)
    assert claimed == 100
    assert read < 1000, f"the claim read {read} index entries for a batch of 100"  # not 100,000 nor 30,000
    rows = conn.execute(
        "select group_key, count(*) from jobs where status = 'running' group by 1 having count(*) > 1"
    ).fetchall()
    assert rows == []  # never two of a group in one batch
    assert conn.execute("select count(*) from jobs where status = 'running' and group_key = 'hot'").fetchone() == (1,)
