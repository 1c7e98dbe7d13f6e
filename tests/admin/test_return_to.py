"""The admin's return addresses (`next=` at sign-in, `back=` on actions) over real HTTP: only the admin's own paths.

A browser resolves `/admin/../signup` to `/signup` (and `%2e%2e` as `..`, a backslash as a slash,
`//host` as another site), so every hostile value below must come back as the admin's home, at
the root and under a host app's mount.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from crontick.app import create_app
from tests.support.admin_pages import ADMIN_SECRET, add_jobs, client, csrf_of, running, settings_for, signed_in
from tests.support.servers import serve

HOSTILE = (
    "/admin/../signup",
    "/admin/%2e%2e/signup",
    "/admin/%2E%2E/signup",
    "/admin/.%2e/signup",
    "/admin/..%2fsignup",
    "/admin/%252e%252e/signup",
    "/admin/jobs/../../signup",
    "/admin/./../signup",
    "/admin/..\\signup",
    "/admin\\..\\signup",
    "//evil.example",
    "//evil.example/admin",
    "/\\evil.example",
    "\\\\evil.example/admin",
    "/%2fevil.example",
    "/%5cevil.example",
    "https://evil.example/admin",
    "javascript:alert(1)//admin",
    "admin/jobs",
    "/adminx",
    "/admin/%00",
    "/admin/%0a/../../signup",
    "/admin/" + "a" * 2000,
)
# Inside the admin, however written: answered as the resolved path, with its query string.
KEPT = {
    "/admin": "/admin",
    "/admin/jobs?status=failed&type=x": "/admin/jobs?status=failed&type=x",
    "/admin/jobs/../audit": "/admin/audit",
    "/admin//jobs/./7": "/admin/jobs/7",
    "/admin/%6aobs": "/admin/jobs",
}


def _login(c: Any, prefix: str, given: str) -> str:
    r = c.post(f"{prefix}/admin/login", data={"secret": ADMIN_SECRET, "next": given})
    assert r.status_code == 303, (given, r.text[:300])
    location: str = r.headers["location"]
    return location


@pytest.mark.parametrize("hostile", HOSTILE)
def test_sign_in_sends_a_hostile_next_to_the_admin_home(database_url: str, hostile: str) -> None:
    with running(settings_for(database_url)) as base:
        c = client(base)
        assert _login(c, "", hostile) == "/admin"
        form = c.get("/admin/login", params={"next": hostile})
        assert form.status_code == 200 and 'name="next" value="/admin"' in form.text


def test_sign_in_keeps_a_next_inside_the_admin(database_url: str) -> None:
    with running(settings_for(database_url)) as base:
        for given, wanted in KEPT.items():
            assert _login(client(base), "", given) == wanted, given


def test_a_hostile_back_on_an_action_returns_to_the_action_s_own_page(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    jobs = add_jobs(conn, len(HOSTILE))
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        token = csrf_of(c.get("/admin").text)
        for job_id, hostile in zip(jobs, HOSTILE, strict=True):
            r = c.post(f"/admin/jobs/{job_id}/retry", data={"csrf": token, "back": hostile, "confirm": "yes"})
            assert r.status_code == 303 and r.headers["location"] == f"/admin/jobs/{job_id}", hostile


@pytest.mark.parametrize(
    ("given", "wanted"),
    [
        ("/ops/admin/../signup", "/ops/admin"),
        ("/ops/admin/%2e%2e/%2e%2e/admin", "/ops/admin"),  # the root's /admin: the host app's, not ours
        ("/admin", "/ops/admin"),
        ("/ops/admin/jobs/../audit?cursor=x", "/ops/admin/audit?cursor=x"),
    ],
)
def test_under_a_mount_only_the_mounted_admin_is_home(database_url: str, given: str, wanted: str) -> None:
    host = Starlette(routes=[Mount("/ops", app=create_app(settings_for(database_url)))])
    with serve(host) as base:
        assert _login(client(base), "/ops", given) == wanted
