"""POST /api/admin/jobs/{id}/cancel over real HTTP against real PostgreSQL: a sleeping or waiting job ends cancelled at
once; a running one (a real handler in a real tick) is asked to stop and ends cancelled at its next step, with no
alert and the step after it never run; an ended job is 409, an unknown one 404, the viewer 403; each cancel audited."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.workflows.children import CANCEL_CHECK_SECONDS
from tests.admin.api_support import ADMIN, VIEWER, api_settings
from tests.support.core_jobs import job_row, tick
from tests.support.http_checks import LiveApp, assert_json_error

JOBS = "/api/admin/jobs"
started = threading.Event()
go_on = threading.Event()
steps_run: list[str] = []


@pytest.fixture(autouse=True)
def _fresh() -> None:
    started.clear()
    go_on.clear()
    steps_run.clear()


def _step(name: str) -> str:
    steps_run.append(name)
    return name


@crontick.handler("t_api_cancel.long")
def long_work(payload: Any, job: crontick.Job) -> None:
    job.step("one", _step, "one")
    started.set()
    assert go_on.wait(30), "the test never let the handler go on"
    job.step("two", _step, "two")


@crontick.handler("t_api_cancel.parked")
def parked(payload: Any, job: crontick.Job) -> None:
    if payload["how"] == "sleep":
        job.sleep("nap", 3600)
    else:
        job.wait_for("answer", f"answer:{job.id}", timeout_seconds=3600)
    _step("after")


def test_a_running_job_is_asked_to_stop_and_ends_cancelled_at_its_next_step(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_api_cancel.long", {})
    ticking = threading.Thread(target=tick, args=(database_url,))
    ticking.start()
    try:
        assert started.wait(30), "the handler never started"
        with live_app(api_settings(database_url)) as base:
            assert_json_error(httpx.post(f"{base}{JOBS}/{job_id}/cancel", headers=VIEWER), 403, "read_only")
            r = httpx.post(f"{base}{JOBS}/{job_id}/cancel", headers=ADMIN)
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["status"] == "running" and body["cancel_requested_at"] is not None
            shown = httpx.get(f"{base}{JOBS}/{job_id}", headers=ADMIN).json()
            assert shown["cancel_requested_at"] == body["cancel_requested_at"]
        time.sleep(CANCEL_CHECK_SECONDS + 0.1)  # past the batch's last read of which jobs were asked to stop
    finally:
        go_on.set()
        ticking.join(60)
    row = job_row(conn, job_id)
    assert row["status"] == "cancelled" and row["attempts"] == 1
    assert steps_run == ["one"]  # the step after the cancel never ran
    recorded = conn.execute("select name from job_steps where job_id = %(id)s order by name", {"id": job_id})
    assert [n for (n,) in recorded] == ["one"]
    assert conn.execute("select count(*) from crontick_alerts").fetchone() == (0,)
    audit = conn.execute("select role, action, rows from admin_audit").fetchall()
    assert audit == [("admin", "cancel_job", 1)]


@pytest.mark.parametrize("how", ["sleep", "wait"])
def test_a_sleeping_or_waiting_job_ends_cancelled_at_once_and_never_resumes(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], how: str
) -> None:
    job_id = crontick.enqueue(conn, "t_api_cancel.parked", {"how": how})
    tick(database_url)
    assert job_row(conn, job_id)["status"] == ("pending" if how == "sleep" else "waiting")
    with live_app(api_settings(database_url)) as base:
        r = httpx.post(f"{base}{JOBS}/{job_id}/cancel", headers=ADMIN)
        assert (r.status_code, r.json()["status"], r.json()["cancel_requested_at"]) == (200, "cancelled", None)
        again = assert_json_error(httpx.post(f"{base}{JOBS}/{job_id}/cancel", headers=ADMIN), 409, "conflict")
        assert "it has ended already" in again["detail"]
        assert_json_error(httpx.post(f"{base}{JOBS}/987654/cancel", headers=ADMIN), 404, "not_found")
    conn.execute("update jobs set run_after = now() - interval '1 second' where id = %(id)s", {"id": job_id})
    conn.execute("update job_steps set wait_until = now() - interval '1 second' where job_id = %(id)s", {"id": job_id})
    tick(database_url)
    assert job_row(conn, job_id)["status"] == "cancelled" and steps_run == []


def test_the_openapi_document_says_cancel_reaches_running_jobs(live_app: LiveApp, database_url: str) -> None:
    with live_app(api_settings(database_url)) as base:
        doc = httpx.get(f"{base}/api/admin/openapi.json", headers=ADMIN).json()
    operation = doc["paths"]["/api/admin/jobs/{id}/cancel"]["post"]
    assert "running one to stop at its next step" in operation["summary"]
    assert {"409", "404"} <= set(operation["responses"])
    job = doc["components"]["schemas"]["Job"]["properties"]
    assert {"start_by", "cancel_requested_at"} <= set(job)
