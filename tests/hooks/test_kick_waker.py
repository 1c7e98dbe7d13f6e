"""CRONTICK_KICK=off with a waker set (crontick.hooks.kick.book_now): what a kick would have started, a wake-up
booked for now starts instead, so the admin's Retry does not leave its job to the daily safety net (issue 35).

Over real HTTP: the app under uvicorn with CRONTICK_WAKER=qstash through the QStash stand-in
(tests/support/qstash_server.py), which delivers the booking signed to the app's own tick.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import psycopg

from tests.support import core_jobs  # noqa: F401  (registers the t_core.* job types)
from tests.support.credentials import ADMIN, API_ADMIN_SECRET
from tests.support.job_rows import insert_jobs
from tests.support.waking import waking_app

WAIT_SECONDS = 20.0  # how long the delivery and its tick may take on a busy machine: not a promise on speed


def status_of(conn: psycopg.Connection[Any], job_id: int) -> str:
    row = conn.execute("select status from jobs where id = %s", (job_id,)).fetchone()
    assert row is not None
    return str(row[0])


def test_retry_with_kicks_off_books_one_wakeup_for_now_whose_delivery_runs_the_job(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    [job_id] = insert_jobs(conn, 1, type="t_core.ok")
    with waking_app(database_url, kick="off", admin_secret=API_ADMIN_SECRET) as (url, stand_in):
        asked = time.time()
        r = httpx.post(f"{url}/api/admin/jobs/{job_id}/retry", headers=ADMIN, timeout=30)
        assert r.status_code == 200, r.text
        (delivery,) = stand_in.wait_delivered(1, timeout=WAIT_SECONDS)
        assert asked - 1 <= delivery.due_at <= time.time() + 1  # booked for now, not a minute or a day later
        assert delivery.url == url + "/api/cron/tick" and delivery.statuses == [200]
        deadline = time.monotonic() + WAIT_SECONDS
        while status_of(conn, job_id) != "done" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert status_of(conn, job_id) == "done"
        assert len(stand_in.published) == 1
    sources = [r[0] for r in conn.execute("select source from crontick_ticks")]
    assert sources and "kick" not in sources  # the delivery's tick ran it; no kick started one


def test_a_refused_retry_books_nothing(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [pending] = insert_jobs(conn, 1, status="pending", type="t_core.ok")
    conn.execute("update jobs set run_after = now() + interval '1 day' where id = %s", (pending,))
    with waking_app(database_url, kick="off", admin_secret=API_ADMIN_SECRET) as (url, stand_in):
        assert httpx.post(f"{url}/api/admin/jobs/{pending}/retry", headers=ADMIN, timeout=30).status_code == 409
        time.sleep(1.0)  # room for a booking that should not come
        assert stand_in.published == []


def test_a_failing_provider_leaves_the_retry_answered(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [job_id] = insert_jobs(conn, 1, type="t_core.ok")
    with waking_app(database_url, kick="off", admin_secret=API_ADMIN_SECRET) as (url, stand_in):
        stand_in.fail_next.append(500)
        r = httpx.post(f"{url}/api/admin/jobs/{job_id}/retry", headers=ADMIN, timeout=30)
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + WAIT_SECONDS
        while not stand_in.published and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(stand_in.published) == 1 and stand_in.deliveries == []
    assert status_of(conn, job_id) == "pending"  # left for the next tick or the safety net
    failed = conn.execute("select count(*) from crontick_wakeups where status = 'failed'").fetchone()
    assert failed == (1,)
