"""The admin session as pure functions (cookie, roles, Origin rules), and the authorize() hook over HTTP."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from starlette.requests import Request

from crontick.admin import authorize, session
from crontick.settings import Settings
from tests.support.admin_pages import (
    ADMIN_SECRET,
    OTHER_SECRET,
    VIEWER_SECRET,
    add_jobs,
    client,
    csrf_of,
    running,
    settings_for,
    status_of,
)
from tests.support.constants import TEST_SECRET

NOW = 1_800_000_000.0
S = Settings(cron_secret=TEST_SECRET, admin_secret=ADMIN_SECRET, admin_viewer_secret=VIEWER_SECRET)


def _request(url: str, headers: dict[str, str] | None = None) -> Request:
    scheme, rest = url.split("://", 1)
    host, _, path = rest.partition("/")
    raw = [(k.lower().encode(), v.encode()) for k, v in {"host": host, **(headers or {})}.items()]
    return Request(
        {
            "type": "http",
            "method": "POST",
            "scheme": scheme,
            "path": "/" + path,
            "query_string": b"",
            "headers": raw,
            "server": (host.split(":")[0], 443),
        }
    )


def test_a_cookie_names_its_role_and_expires_within_8_hours() -> None:
    for role in ("admin", "viewer"):
        value = session.issue(S, role, NOW)
        assert session.verify(S, value, NOW) == role
        assert session.verify(S, value, NOW + 8 * 3600) == role
        assert session.verify(S, value, NOW + 8 * 3600 + 1) is None


def test_a_cookie_dies_with_its_secret_and_cannot_be_edited() -> None:
    value = session.issue(S, "admin", NOW)
    assert session.verify(dataclasses.replace(S, admin_secret=OTHER_SECRET), value, NOW) is None
    viewer = session.issue(S, "viewer", NOW)
    assert session.verify(S, viewer.replace(".viewer.", ".admin."), NOW) is None
    parts = value.split(".")
    longer = ".".join([parts[0], parts[1], str(int(parts[2]) + 3600), *parts[3:]])
    assert session.verify(S, longer, NOW) is None
    assert session.verify(dataclasses.replace(S, admin_viewer_secret=None), viewer, NOW) is None
    for junk in ["", "v1", "v1.admin.x.y.z", "v2.admin.1.2.3", "v1.root.9999999999.n.m"]:
        assert session.verify(S, junk, NOW) is None


def test_secrets_match_in_constant_time_and_cron_secret_matches_nothing() -> None:
    assert session.match_secret(S, ADMIN_SECRET) == "admin"
    assert session.match_secret(S, VIEWER_SECRET) == "viewer"
    assert session.match_secret(S, TEST_SECRET) is None
    assert session.match_secret(S, ADMIN_SECRET[:-1]) is None
    same = dataclasses.replace(S, admin_secret=TEST_SECRET)
    assert not session.admin_open(same) and session.match_secret(same, TEST_SECRET) is None


def test_csrf_token_is_bound_to_the_session() -> None:
    a, b = session.issue(S, "admin", NOW), session.issue(S, "admin", NOW)
    assert session.csrf_token(S, "admin", a) != session.csrf_token(S, "admin", b)
    assert session.csrf_token(S, "admin", a) == session.csrf_token(S, "admin", a)


@pytest.mark.parametrize(
    ("headers", "ok"),
    [
        ({"Sec-Fetch-Site": "same-origin"}, True),
        ({"Sec-Fetch-Site": "same-origin", "Origin": "https://evil.example"}, True),  # the browser's own word wins
        ({"Sec-Fetch-Site": "same-site", "Origin": "https://admin.example"}, False),
        ({"Sec-Fetch-Site": "cross-site"}, False),
        ({"Sec-Fetch-Site": "none"}, False),
        ({"Origin": "https://admin.example"}, True),
        ({"Origin": "https://public.example"}, True),
        ({"Origin": "https://evil.example"}, False),
        ({"Origin": "null"}, False),
        ({}, False),
    ],
)
def test_same_origin_rules(headers: dict[str, str], ok: bool) -> None:
    settings = dataclasses.replace(S, public_url="https://public.example")
    assert session.same_origin(_request("https://admin.example/admin/logout", headers), settings) is ok


def test_cookie_name_and_flags_depend_on_loopback_http() -> None:
    assert session.cookie_name(_request("http://127.0.0.1:8000/admin")) == "crontick_admin_8000"
    assert session.cookie_name(_request("http://localhost:8000/admin")) == "crontick_admin_8000"
    assert session.cookie_name(_request("https://127.0.0.1/admin")) == "__Host-crontick_admin"
    assert session.cookie_name(_request("http://app.internal/admin")) == "__Host-crontick_admin"


@pytest.fixture
def hook() -> Iterator[dict[str, Any]]:
    """An app's own login, as a header its proxy sets; unregistered afterwards."""
    seen: dict[str, Any] = {"calls": 0}

    async def from_header(request: Request) -> str | None:
        seen["calls"] += 1
        return {"alice": "admin", "bob": "viewer"}.get(request.headers.get("x-app-user", ""))

    authorize(from_header)
    yield seen
    session._hook.clear()


def test_the_authorize_hook_opens_the_admin_with_its_roles(
    hook: dict[str, Any], database_url: str, conn: psycopg.Connection[Any]
) -> None:
    [job_id] = add_jobs(conn, 1)
    with running(settings_for(database_url)) as base:
        c = client(base)
        assert c.get("/admin").status_code == 303  # no user: the login form, as before
        alice = c.get(f"/admin/jobs/{job_id}", headers={"X-App-User": "alice"})
        assert alice.status_code == 200 and ">Retry<" in alice.text and "Sign out" not in alice.text
        token = csrf_of(alice.text)
        bob = c.post(
            f"/admin/jobs/{job_id}/retry", data={"csrf": token, "confirm": "yes"}, headers={"X-App-User": "bob"}
        )
        assert bob.status_code == 403
        cross = c.post(
            f"/admin/jobs/{job_id}/retry",
            data={"csrf": token, "confirm": "yes"},
            headers={"X-App-User": "alice", "Sec-Fetch-Site": "cross-site"},
        )
        assert cross.status_code == 403 and status_of(conn, job_id) == "failed"
        ok = c.post(
            f"/admin/jobs/{job_id}/retry", data={"csrf": token, "confirm": "yes"}, headers={"X-App-User": "alice"}
        )
        assert ok.status_code == 303 and status_of(conn, job_id) == "pending"
    assert hook["calls"] >= 4
    with running(settings_for(database_url, admin_secret=None, admin_viewer_secret=None)) as base:
        assert client(base).get("/admin", headers={"X-App-User": "alice"}).status_code == 404  # still closed


def test_dev_admin_secret_is_created_private_and_kept(tmp_path: Any) -> None:
    import os
    import stat

    from crontick.cli import main

    path = tmp_path / ".crontick" / "dev-admin-secret"
    old = os.umask(0)  # even with a permissive umask the file is never readable by others
    try:
        value = main._dev_secret(path, prefix="admin-")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert value.startswith("dev-admin-") and len(value) >= 32
    assert main._dev_secret(path, prefix="admin-") == value
    assert Settings.from_env({"CRONTICK_ADMIN_SECRET": value}).admin_secret == value
