"""crontick.cancel over real ticks: a pending, sleeping or waiting job ends cancelled at once; a running one stops at its
next step with crontick.Cancelled and ends cancelled (no alert, no retry); SQL and Python alike, in the caller's
transaction."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

import crontick
from tests.support.core_jobs import job_row, tick

started = threading.Event()
seen: list[str] = []


def _noop(n: int) -> int:
    return n


@crontick.handler("t_cancel.loop")
def loop(payload: Any, job: crontick.Job) -> None:
    started.set()
    try:
        for n in range(200):
            job.step(f"s{n}", _noop, n)
            time.sleep(0.05)
    except crontick.Cancelled:
        seen.append("cancelled")
        raise


@crontick.handler("t_cancel.aloop")
async def aloop(payload: Any, job: crontick.Job) -> None:
    import asyncio

    started.set()
    for n in range(200):
        await job.step(f"s{n}", _noop, n)
        await asyncio.sleep(0.05)


@crontick.handler("t_cancel.nap")
async def nap(payload: Any, job: crontick.Job) -> None:
    await job.sleep("nap", 3600)


@crontick.handler("t_cancel.wait")
async def wait(payload: Any, job: crontick.Job) -> None:
    await job.wait_for("answer", "t_cancel:answer", timeout_seconds=3600)


def test_pending_sleeping_and_waiting_jobs_end_cancelled_at_once(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    pending = crontick.enqueue(conn, "t_cancel.nap", {}, run_after=None)
    sleeping = crontick.enqueue(conn, "t_cancel.nap", {})
    waiting = crontick.enqueue(conn, "t_cancel.wait", {})
    conn.execute("update jobs set run_after = now() + interval '1 hour' where id = %(id)s", {"id": pending})
    tick(database_url)
    assert [job_row(conn, i)["status"] for i in (pending, sleeping, waiting)] == ["pending", "pending", "waiting"]
    with conn.transaction():
        assert crontick.cancel(conn, pending) is True
        [(by_sql,)] = conn.execute("select crontick.cancel(%(id)s)", {"id": sleeping}).fetchall()
        assert by_sql is True
    with conn.transaction():  # a rolled-back cancel cancels nothing
        crontick.cancel(conn, waiting)
        raise psycopg.Rollback()
    assert job_row(conn, waiting)["status"] == "waiting"
    assert crontick.cancel(conn, waiting) is True
    assert [job_row(conn, i)["status"] for i in (pending, sleeping, waiting)] == ["cancelled"] * 3
    assert crontick.cancel(conn, waiting) is False  # ended already
    assert crontick.cancel(conn, 10**12) is False
    assert conn.execute("select count(*) from crontick_alerts").fetchone() == (0,)


@pytest.mark.parametrize("type", ["t_cancel.loop", "t_cancel.aloop"])
def test_a_running_job_stops_at_its_next_step_and_ends_cancelled_without_alert_or_retry(
    type: str, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    started.clear()
    seen.clear()
    job_id = crontick.enqueue(conn, type, {})
    runner = threading.Thread(target=tick, args=(database_url,))
    runner.start()
    assert started.wait(10)
    time.sleep(0.3)
    assert crontick.cancel(conn, job_id) is True
    runner.join(30)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("cancelled", 1)
    assert row["last_error"].startswith("Cancelled: job")
    assert row["finished_at"] is not None
    assert seen == (["cancelled"] if type == "t_cancel.loop" else [])
    steps = conn.execute("select count(*) from job_steps where job_id = %(id)s", {"id": job_id}).fetchone()
    assert steps is not None and 0 < steps[0] < 200  # it stopped before the end
    assert conn.execute("select count(*) from crontick_alerts").fetchone() == (0,)
    tick(database_url)  # nothing runs it again
    assert job_row(conn, job_id)["status"] == "cancelled"
