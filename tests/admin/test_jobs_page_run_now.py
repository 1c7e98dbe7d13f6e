"""The admin pages of issue 23 over real HTTP: due and scheduled jobs with Run now (one and in bulk), the
error search, the per-type figures on the overview, the audit page, each attempt's tick on the job page,
and the schedules page's Enqueue now, Pause and Resume (confirmed, audited, refused to the viewer)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.support.admin_pages import VIEWER_SECRET, add_jobs, csrf_of, running, settings_for, signed_in
from tests.support.core_jobs import db_now, tick
from tests.support.declared import declared

SCHEDULE = "t-pages-ops-nightly"


@pytest.fixture
def nightly() -> Iterator[str]:
    with declared(SCHEDULE, "30 2 * * *", "t_core.ok", {"kind": "nightly"}) as name:
        yield name


def test_scheduled_jobs_show_run_after_and_run_now_keeps_attempts(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    later = add_jobs(conn, 3, status="pending", type="t_pages_ops.later", error=None)
    conn.execute("update jobs set run_after = now() + interval '2 days', attempts = 1 where status = 'pending'")
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        page = c.get("/admin/jobs?status=scheduled")
        assert page.status_code == 200 and f"#{later[0]}" in page.text and "s-scheduled" in page.text
        assert "in 48 h" in page.text or "in 2 d" in page.text  # run_after, relative beside absolute
        assert f"#{later[0]}" not in c.get("/admin/jobs?status=due").text
        job_page = c.get(f"/admin/jobs/{later[0]}")
        assert ">Run now</button>" in job_page.text
        token = csrf_of(job_page.text)
        done = c.post(f"/admin/jobs/{later[0]}/run-now", data={"csrf": token, "confirm": "yes"})
        assert done.status_code == 303
        assert f"#{later[0]}" in c.get("/admin/jobs?status=due").text
        ask = c.post("/admin/jobs/bulk-run-now", data={"csrf": token, "type": "t_pages_ops.later"})
        assert ask.status_code == 200 and "Run 2 scheduled jobs now?" in ask.text
        fields = dict(_hidden(ask.text))
        moved = c.post("/admin/jobs/bulk-run-now", data=fields)
        assert moved.status_code == 303
        assert "2 scheduled jobs are due now." in c.get(moved.headers["location"]).text
    rows = conn.execute("select attempts, run_after <= now() from jobs order by id").fetchall()
    assert rows == [(1, True)] * 3
    actions = [r[0] for r in conn.execute("select action from admin_audit order by id")]
    assert actions == ["sign_in", "run_now", "bulk_run_now"]


def test_error_search_overview_types_audit_and_job_ticks(database_url: str, conn: psycopg.Connection[Any]) -> None:
    add_jobs(conn, 2, error="ValueError: n")
    [limited] = add_jobs(conn, 1, type="t_pages_ops.http", error="HTTPStatusError: 429 Too Many Requests")
    conn.execute("insert into jobs (type, payload) select 't_core.ok', '{}' from generate_series(1, 3)")
    failing = conn.execute(
        "insert into jobs (type, payload, max_attempts) values ('t_core.fail', '{}', 1) returning id"
    ).fetchone()[0]  # type: ignore[index]
    tick(database_url, now=db_now(conn))
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        found = c.get("/admin/jobs", params={"error": "too many"})
        assert found.status_code == 200 and f"#{limited}" in found.text and found.text.count('class="num"><a') == 1
        overview = c.get("/admin/overview").text
        assert "Job types, worst first" in overview
        assert overview.index("t_core.fail") < overview.index("t_core.ok")  # the failing type leads
        job = c.get(f"/admin/jobs/{failing}").text
        assert "<th>Tick</th>" in job and "test</span>" in job
        token = csrf_of(job)
        c.post(f"/admin/jobs/{failing}/retry", data={"csrf": token, "confirm": "yes"})
        audit = c.get("/admin/audit")
        assert audit.status_code == 200 and "retry_job" in audit.text and f"job {failing}" in audit.text
        v = signed_in(base, VIEWER_SECRET)
        assert v.get("/admin/audit").status_code == 200
        refused = v.post(f"/admin/jobs/{failing}/run-now", data={"csrf": csrf_of(v.get("/admin/audit").text)})
        assert refused.status_code == 403


def test_schedules_page_enqueue_now_pause_and_resume(
    database_url: str, conn: psycopg.Connection[Any], nightly: str
) -> None:
    tick(database_url, now=db_now(conn))
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        page = c.get("/admin/schedules")
        assert ">Enqueue now</button>" in page.text and ">Pause</button>" in page.text
        token = csrf_of(page.text)
        assert c.post(f"/admin/schedules/{nightly}/enqueue", data={"csrf": token}).status_code == 200  # asks first
        done = c.post(f"/admin/schedules/{nightly}/enqueue", data={"csrf": token, "confirm": "yes"})
        assert done.status_code == 303
        assert "outside its slots" in c.get(done.headers["location"]).text
        c.post(f"/admin/schedules/{nightly}/pause", data={"csrf": token, "confirm": "yes"})
        paused = c.get("/admin/schedules").text
        assert "s-paused" in paused and ">Resume</button>" in paused
        v = signed_in(base, VIEWER_SECRET)
        viewer_page = v.get("/admin/schedules").text
        assert ">Resume</button>" not in viewer_page
        assert (
            v.post(
                f"/admin/schedules/{nightly}/resume", data={"csrf": csrf_of(viewer_page), "confirm": "yes"}
            ).status_code
            == 403
        )
        c.post(f"/admin/schedules/{nightly}/resume", data={"csrf": token, "confirm": "yes"})
        assert ">Pause</button>" in c.get("/admin/schedules").text
    assert conn.execute("select count(*) from jobs where schedule = %(n)s", {"n": nightly}).fetchone() == (1,)
    assert conn.execute("select count(*) from crontick_schedule_slots").fetchone() == (0,)
    actions = [r[0] for r in conn.execute("select action from admin_audit order by id")]
    assert actions == [
        "sign_in",
        "enqueue_schedule",
        "pause_schedule",
        "sign_in",
        "resume_schedule",
    ]  # the viewer signs in


def _hidden(html: str) -> Iterator[tuple[str, str]]:
    """The hidden fields of a confirmation form, as the browser posts them."""
    import re

    for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html):
        yield name, value.replace("&amp;", "&").replace("&#34;", '"').replace("&#39;", "'")
