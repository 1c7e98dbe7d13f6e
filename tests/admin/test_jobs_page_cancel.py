"""The job page's Cancel over real HTTP: offered for pending, sleeping, waiting and running jobs (confirmed, CSRF-checked,
audited, refused to the viewer); a running job is asked to stop, and the page says so; a job's start_by is shown, and
an expired job's page says why it never ran."""

from __future__ import annotations

from typing import Any

import psycopg

import crontick
from tests.support.admin_pages import VIEWER_SECRET, csrf_of, running, settings_for, signed_in
from tests.support.core_jobs import tick

CANCEL_BUTTON = ">Cancel</button>"


def _running(conn: psycopg.Connection[Any]) -> int:
    """A job a tick is running now (as its claim leaves it: leased, its attempt counted)."""
    job_id = crontick.enqueue(conn, "t_page_cancel.long", {})
    conn.execute(
        "update jobs set status = 'running', attempts = 1, started_at = now(), locked_until = now() + interval '5 minutes'"
        " where id = %(id)s",
        {"id": job_id},
    )
    return int(job_id)


def test_cancel_on_a_running_jobs_page_asks_it_to_stop(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = _running(conn)
    with running(settings_for(database_url)) as base:
        viewer = signed_in(base, VIEWER_SECRET)
        seen = viewer.get(f"/admin/jobs/{job_id}").text
        assert CANCEL_BUTTON not in seen
        refused = viewer.post(f"/admin/jobs/{job_id}/cancel", data={"csrf": csrf_of(seen), "confirm": "yes"})
        assert refused.status_code == 403
        c = signed_in(base)
        page = c.get(f"/admin/jobs/{job_id}").text
        assert CANCEL_BUTTON in page
        token = csrf_of(page)
        ask = c.post(f"/admin/jobs/{job_id}/cancel", data={"csrf": token})
        assert ask.status_code == 200 and "a running job stops at its next step" in ask.text  # confirms first
        assert c.post(f"/admin/jobs/{job_id}/cancel", data={"confirm": "yes"}).status_code == 403  # no CSRF token
        done = c.post(f"/admin/jobs/{job_id}/cancel", data={"csrf": token, "confirm": "yes"})
        assert done.status_code == 303
        after = c.get(done.headers["location"]).text
        assert f"Job #{job_id} is asked to stop: it ends cancelled at its next step." in after
        assert "Cancel asked" in after and CANCEL_BUTTON not in after  # asked once; nothing more to press
    row = conn.execute("select status, cancel_requested_at from jobs where id = %(id)s", {"id": job_id}).fetchone()
    assert row is not None and row[0] == "running" and row[1] is not None
    assert conn.execute("select role, action from admin_audit where action = 'cancel_job'").fetchall() == [
        ("admin", "cancel_job")
    ]


def test_a_jobs_start_by_is_shown_and_an_expired_job_says_why_it_never_ran(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    waiting = crontick.enqueue(conn, "t_page_cancel.reply", {}, start_by=600)
    late = crontick.enqueue(conn, "t_page_cancel.reply", {}, start_by=600)
    conn.execute("update jobs set start_by = now() - interval '1 minute' where id = %(id)s", {"id": late})
    tick(database_url)
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        page = c.get(f"/admin/jobs/{late}").text
        assert "Start by" in page and "expired: not started by its start_by" in page
        assert CANCEL_BUTTON not in page
        conn.execute(
            "update jobs set status = 'pending', run_after = now() + interval '1 hour' where id = %(id)s",
            {"id": waiting},
        )
        pending = c.get(f"/admin/jobs/{waiting}").text
        assert "Start by" in pending and CANCEL_BUTTON in pending
