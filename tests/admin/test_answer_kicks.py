"""The admin's actions that make work due start a tick as a kick does (crontick.admin.answer.kicking; issue 35: job
1675 was still `pending` 12 s after Retry). Over real HTTP against the app under uvicorn with CRONTICK_KICK=inline:
Retry, Run now, Signal, a schedule's Run now and a resumed pause each end with their job run, and no tick endpoint
is ever called (every tick row's source is `kick`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from tests.admin.api_support import ADMIN, api_settings, insert_jobs
from tests.support import core_jobs  # noqa: F401  (registers the t_core.* job types)
from tests.support.admin_pages import csrf_of, running, settings_for, signed_in
from tests.support.declared import declared
from tests.support.http_checks import LiveApp

JOBS = "/api/admin/jobs"
SCHEDULE = "t-kick-hourly"
WAIT_SECONDS = 20.0  # how long the tick may take to appear on a busy machine: not a promise on speed


def ran(conn: psycopg.Connection[Any], job_id: int) -> str:
    """The job's status once a tick has run it ('done'), or its status after WAIT_SECONDS."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        row = conn.execute("select status from jobs where id = %s", (job_id,)).fetchone()
        assert row is not None
        if row[0] == "done" or time.monotonic() > deadline:
            return str(row[0])
        time.sleep(0.05)


def tick_sources(conn: psycopg.Connection[Any]) -> set[str]:
    return {r[0] for r in conn.execute("select source from crontick_ticks")}


def failed_ok_job(conn: psycopg.Connection[Any]) -> int:
    [job_id] = insert_jobs(conn, 1, type="t_core.ok")
    return job_id


@pytest.fixture
def hourly() -> Iterator[str]:
    with declared(SCHEDULE, "0 * * * *", "t_core.ok", {"from": "schedule"}) as name:
        yield name


def test_api_retry_runs_the_job_without_a_tick_call(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = failed_ok_job(conn)
    with live_app(api_settings(database_url, kick="inline")) as base:
        r = httpx.post(f"{base}{JOBS}/{job_id}/retry", headers=ADMIN)
        assert r.status_code == 200, r.text
        assert ran(conn, job_id) == "done"
    assert tick_sources(conn) == {"kick"}


def test_api_run_now_runs_a_scheduled_job_at_once(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(
        conn, "t_core.ok", {}, run_after=conn.execute("select now() + interval '3 days'").fetchone()[0]
    )  # type: ignore[index]
    with live_app(api_settings(database_url, kick="inline")) as base:
        r = httpx.post(f"{base}{JOBS}/{job_id}/run-now", headers=ADMIN)
        assert r.status_code == 200, r.text
        assert ran(conn, job_id) == "done"
    assert tick_sources(conn) == {"kick"}


def test_api_bulk_retry_runs_what_it_retried(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ids = insert_jobs(conn, 3, type="t_core.ok")
    with live_app(api_settings(database_url, kick="inline")) as base:
        r = httpx.post(f"{base}{JOBS}/retry", headers=ADMIN, json={"type": "t_core.ok"})
        assert r.status_code == 200 and r.json()["retried"] == 3, r.text
        assert [ran(conn, i) for i in ids] == ["done"] * 3


def test_a_refused_action_starts_no_tick(live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]) -> None:
    [pending] = insert_jobs(conn, 1, status="pending", type="t_core.ok")
    conn.execute("update jobs set run_after = now() + interval '1 day' where id = %s", (pending,))
    with live_app(api_settings(database_url, kick="inline")) as base:
        assert httpx.post(f"{base}{JOBS}/{pending}/retry", headers=ADMIN).status_code == 409  # not retryable
        time.sleep(1.0)  # room for a tick that should not come
    assert tick_sources(conn) == set()


def test_schedule_run_now_runs_its_job(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], hourly: str
) -> None:
    with live_app(api_settings(database_url, kick="inline")) as base:
        r = httpx.post(f"{base}/api/admin/schedules/{hourly}/enqueue", headers=ADMIN)
        assert r.status_code == 200, r.text
        assert ran(conn, r.json()["job_id"]) == "done"


def test_resuming_a_paused_type_runs_its_due_jobs(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_core.ok", {})
    conn.execute("insert into crontick_pauses (kind, name) values ('type', 't_core.ok')")
    with live_app(api_settings(database_url, kick="inline")) as base:
        r = httpx.post(f"{base}/api/admin/types/t_core.ok/resume", headers=ADMIN)
        assert r.status_code == 200, r.text
        assert ran(conn, job_id) == "done"
    assert tick_sources(conn) == {"kick"}


def test_the_job_page_retry_runs_the_job(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = failed_ok_job(conn)
    with running(settings_for(database_url, kick="inline")) as base:
        c = signed_in(base)
        token = csrf_of(c.get(f"/admin/jobs/{job_id}").text)
        done = c.post(f"/admin/jobs/{job_id}/retry", data={"csrf": token, "confirm": "yes"})
        assert done.status_code == 303
        assert ran(conn, job_id) == "done"
    assert tick_sources(conn) == {"kick"}


def test_the_job_page_cancel_starts_no_tick(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [pending] = insert_jobs(conn, 1, status="pending", type="t_core.ok")
    with running(settings_for(database_url, kick="inline")) as base:
        c = signed_in(base)
        token = csrf_of(c.get(f"/admin/jobs/{pending}").text)
        assert c.post(f"/admin/jobs/{pending}/cancel", data={"csrf": token, "confirm": "yes"}).status_code == 303
        time.sleep(1.0)  # room for a tick that should not come
    assert tick_sources(conn) == set()
