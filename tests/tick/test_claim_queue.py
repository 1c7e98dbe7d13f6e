"""Claiming: concurrent claims get disjoint sets, locked rows are skipped, leases and attempts are set."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from crontick import db, enqueue_many
from crontick.jobs.job import Job
from crontick.tick.claim import claim_due


def _claim(url: str, now: datetime, limit: int, lease_seconds: float = 30) -> list[Job]:
    async def go() -> list[Job]:
        conn = await db.connect(url)
        try:
            return await claim_due(conn, now, limit, lease_seconds)
        finally:
            await conn.close()

    return asyncio.run(go())


def _later() -> datetime:
    return datetime.now(UTC) + timedelta(seconds=5)


def test_claim_marks_running_counts_the_attempt_and_sets_the_lease(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ids = enqueue_many(conn, [("t_core.ok", {"n": n}) for n in range(3)])
    now = _later()
    jobs = _claim(database_url, now, 10, lease_seconds=45)
    assert sorted(j.id for j in jobs) == ids
    assert {(j.attempt, j.max_attempts, j.type) for j in jobs} == {(1, 4, "t_core.ok")}
    assert sorted(j.payload["n"] for j in jobs) == [0, 1, 2]
    rows = conn.execute("select status, attempts, locked_until from jobs").fetchall()
    assert rows == [("running", 1, now + timedelta(seconds=45))] * 3


def test_claim_takes_at_most_the_limit_oldest_first(database_url: str, conn: psycopg.Connection[Any]) -> None:
    ids = enqueue_many(conn, [("t_core.ok", {}) for _ in range(5)])
    conn.execute("update jobs set run_after = run_after - make_interval(secs => id)")  # higher id = older
    jobs = _claim(database_url, _later(), 2)
    assert {j.id for j in jobs} == set(sorted(ids, reverse=True)[:2])


def test_two_connections_claiming_at_once_get_disjoint_sets(database_url: str, conn: psycopg.Connection[Any]) -> None:
    ids = enqueue_many(conn, [("t_core.ok", {"n": n}) for n in range(200)])
    now = _later()

    async def both() -> tuple[list[Job], list[Job]]:
        a, b = await db.connect(database_url), await db.connect(database_url)
        try:
            got = await asyncio.gather(claim_due(a, now, 120, 30), claim_due(b, now, 120, 30))
            return got[0], got[1]
        finally:
            await a.close()
            await b.close()

    first, second = asyncio.run(both())
    first_ids, second_ids = {j.id for j in first}, {j.id for j in second}
    assert not first_ids & second_ids
    assert first_ids | second_ids == set(ids)


def test_threads_claiming_at_once_get_disjoint_sets(database_url: str, conn: psycopg.Connection[Any]) -> None:
    ids = enqueue_many(conn, [("t_core.ok", {}) for _ in range(300)])
    now = _later()
    start = threading.Barrier(4)
    claimed: list[list[int]] = []

    def worker() -> None:
        start.wait()
        claimed.append([j.id for j in _claim(database_url, now, 100)])

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    every = [i for batch in claimed for i in batch]
    assert len(claimed) == 4
    assert len(every) == len(set(every)) == 300
    assert set(every) == set(ids)
    assert conn.execute("select max(attempts) from jobs").fetchone() == (1,)


def test_rows_locked_by_an_open_claim_are_skipped_not_waited_for(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ids = enqueue_many(conn, [("t_core.ok", {}) for _ in range(30)])
    now = _later()

    async def go() -> tuple[set[int], set[int]]:
        # Not autocommit: the holder's claim stays in an open transaction, its rows locked.
        holder = await psycopg.AsyncConnection.connect(database_url)
        # If the second claim waited on the held rows instead of skipping them, it would time out.
        other = await psycopg.AsyncConnection.connect(
            database_url, autocommit=True, options="-c statement_timeout=5000"
        )
        try:
            held = {j.id for j in await claim_due(holder, now, 10, 30)}
            others = {j.id for j in await claim_due(other, now, 100, 30)}
            await holder.rollback()
            return held, others
        finally:
            await holder.close()
            await other.close()

    held, others = asyncio.run(go())
    assert len(held) == 10 and others == set(ids) - held
    # The rolled-back claim left its rows pending with no attempt counted; they are claimable again.
    assert conn.execute("select count(*) from jobs where status = 'pending' and attempts = 0").fetchone() == (10,)
    assert {j.id for j in _claim(database_url, now, 100)} == held


def test_nothing_is_claimed_twice(database_url: str, conn: psycopg.Connection[Any]) -> None:
    enqueue_many(conn, [("t_core.ok", {}) for _ in range(4)])
    now = _later()
    assert len(_claim(database_url, now, 10)) == 4
    assert _claim(database_url, now, 10) == []
