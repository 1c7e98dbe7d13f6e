"""Who the audit log names, over real HTTP: the person an authorize() hook gives, and every sign-in and sign-out."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from starlette.requests import Request

import crontick.admin
from crontick.admin import session
from tests.support.admin_pages import ADMIN_SECRET, add_jobs, client, csrf_of, running, settings_for

WRONG_SECRET = "wrong-secret-" + "w" * 32


@pytest.fixture
def named_hook() -> Iterator[None]:
    """A host app's login: the X-App-User header names the person; alice@example.com is an admin."""

    def from_header(request: Request) -> crontick.admin.Actor | None:
        user = request.headers.get("x-app-user")
        return crontick.admin.Actor("admin", user) if user else None

    crontick.admin.authorize(from_header)
    yield
    session._hook.clear()


def _audit(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return conn.execute("select role, actor, action from admin_audit order by id").fetchall()


def test_an_action_records_the_person_the_hook_names(
    named_hook: None, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    [job_id] = add_jobs(conn, 1)
    who = {"X-App-User": "alice@example.com"}
    with running(settings_for(database_url)) as base:
        c = client(base)
        token = csrf_of(c.get(f"/admin/jobs/{job_id}", headers=who).text)
        done = c.post(f"/admin/jobs/{job_id}/retry", data={"csrf": token, "confirm": "yes"}, headers=who)
        assert done.status_code == 303
        assert _audit(conn) == [("admin", "alice@example.com", "retry_job")]
        page = c.get("/admin/audit", headers=who)
        assert page.status_code == 200 and "<td>alice@example.com</td>" in page.text
        api = httpx.get(base + "/api/admin/audit", headers={"Authorization": f"Bearer {ADMIN_SECRET}"})
        [entry] = api.json()["entries"]
        assert entry["actor"] == "alice@example.com" and entry["role"] == "admin"
        # The bearer API knows only a role: its actions record no person.
        retried = httpx.post(
            base + f"/api/admin/jobs/{job_id}/cancel", headers={"Authorization": f"Bearer {ADMIN_SECRET}"}
        )
        assert retried.status_code == 200
    assert _audit(conn)[-1] == ("admin", None, "cancel_job")


def test_sign_in_its_failure_and_sign_out_are_audited_without_the_secret(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with running(settings_for(database_url)) as base:
        c = client(base)
        assert c.post("/admin/login", data={"secret": WRONG_SECRET}).status_code == 401
        assert c.post("/admin/login", data={"secret": ADMIN_SECRET}).status_code == 303
        token = csrf_of(c.get("/admin").text)
        assert c.post("/admin/logout", data={"csrf": token}).status_code == 303
        entries = httpx.get(base + "/api/admin/audit", headers={"Authorization": f"Bearer {ADMIN_SECRET}"}).json()
    assert _audit(conn) == [(None, None, "sign_in_failed"), ("admin", None, "sign_in"), ("admin", None, "sign_out")]
    assert [e["action"] for e in entries["entries"]] == ["sign_out", "sign_in", "sign_in_failed"]
    stored = conn.execute("select string_agg(admin_audit::text, ' ') from admin_audit").fetchone()
    assert stored is not None and WRONG_SECRET not in stored[0] and ADMIN_SECRET not in stored[0]
    assert "127.0.0.1" in stored[0]  # the client that tried
