"""The admin shows a workflow's steps and what a waiting job waits for: the job page and GET /api/admin/jobs/{id}
(checked against its OpenAPI schema), and a waiting job can be cancelled by hand."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import psycopg
import schemathesis

import crontick
from crontick.admin.jobs import steps
from tests.support.admin_pages import ADMIN_SECRET, VIEWER_SECRET, csrf_of, running, settings_for, signed_in
from tests.support.core_jobs import db_now, job_row, tick

BEARER = {"Authorization": f"Bearer {ADMIN_SECRET}"}


@crontick.handler("t_wfadmin.reply")
async def reply(payload: Any, job: crontick.Job) -> None:
    await job.step("context", lambda: {"history": ["hi"] * 100})  # a result longer than its preview
    await job.step("llm", lambda: "Hello <b>there</b>")
    await job.wait_for("delivered", f"sms:{payload['sid']}", timeout_seconds=600)


def test_the_job_page_and_api_show_steps_and_the_wait(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_wfadmin.reply", {"sid": "SM42"})
    now = db_now(conn)
    tick(database_url, now=now)
    assert job_row(conn, job_id)["status"] == "waiting"
    with running(settings_for(database_url)) as base:
        schema = schemathesis.openapi.from_dict(httpx.get(base + "/api/admin/openapi.json", headers=BEARER).json())
        answer = httpx.get(f"{base}/api/admin/jobs/{job_id}", headers=BEARER)
        assert answer.status_code == 200, answer.text
        schema["/api/admin/jobs/{id}"]["GET"].validate_response(answer)
        detail = answer.json()
        assert [(s["name"], s["kind"], s["status"]) for s in detail["steps"]] == [
            ("context", "step", "done"),
            ("llm", "step", "done"),
            ("delivered", "wait", "waiting"),
        ]
        context = detail["steps"][0]
        assert len(context["preview"]) == steps.STEP_PREVIEW_CHARS < context["result_chars"]
        assert detail["steps"][1]["preview"] == '"Hello <b>there</b>"'
        assert detail["waiting_for"]["event_key"] == "sms:SM42" and detail["waiting_for"]["step"] == "delivered"

        browser = signed_in(base)
        page = browser.get(f"/admin/jobs/{job_id}")
        assert page.status_code == 200
        html = page.text
        assert "<h2>Steps</h2>" in html and "<code>sms:SM42</code>" in html
        assert "Hello &lt;b&gt;there&lt;/b&gt;" in html  # escaped, never markup
        assert f"/admin/jobs/{job_id}/cancel" in html  # a waiting job can be cancelled by hand
        done = browser.post(f"/admin/jobs/{job_id}/cancel", data={"csrf": csrf_of(html), "confirm": "yes"})
        assert done.status_code == 303, done.text
    assert job_row(conn, job_id)["status"] == "cancelled"
    assert crontick.signal(conn, "sms:SM42", "late") is None  # a cancelled waiter wakes no more: kept instead


def test_a_job_without_steps_shows_no_steps(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_core_never_registered.x", {})
    with running(settings_for(database_url)) as base:
        detail = httpx.get(f"{base}/api/admin/jobs/{job_id}", headers=BEARER).json()
        assert (detail["steps"], detail["waiting_for"]) == ([], None)
        assert "<h2>Steps</h2>" not in signed_in(base).get(f"/admin/jobs/{job_id}").text


@crontick.handler("t_wfadmin.approval")
async def approval(payload: Any, job: crontick.Job) -> None:
    decision = await job.wait_for("approve", "approval:42", timeout_seconds=600)
    await job.step("record", lambda: decision)


def test_an_admin_signals_a_waiting_job_by_hand_through_the_api(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_wfadmin.approval", {})
    tick(database_url, now=db_now(conn))
    with running(settings_for(database_url)) as base:
        schema = schemathesis.openapi.from_dict(httpx.get(base + "/api/admin/openapi.json", headers=BEARER).json())
        viewer = {"Authorization": f"Bearer {VIEWER_SECRET}"}
        assert httpx.post(f"{base}/api/admin/jobs/{job_id}/signal", headers=viewer).status_code == 403
        answer = httpx.post(f"{base}/api/admin/jobs/{job_id}/signal", headers=BEARER, json={"payload": {"ok": True}})
        assert answer.status_code == 200, answer.text
        schema["/api/admin/jobs/{id}/signal"]["POST"].validate_response(answer)
        assert answer.json()["status"] == "pending"
        again = httpx.post(f"{base}/api/admin/jobs/{job_id}/signal", headers=BEARER, json={})
        assert again.status_code == 409 and again.json()["error"] == "conflict"  # no longer waiting
    assert tick(database_url, now=db_now(conn) + timedelta(seconds=5)).jobs.succeeded == 1
    recorded = conn.execute("select result from job_steps where job_id = %(id)s and name = 'record'", {"id": job_id})
    assert recorded.fetchone() == ({"ok": True},)
    audit = conn.execute("select role, action from admin_audit where action = 'signal_job'").fetchall()
    assert audit == [("admin", "signal_job")]
