"""Sign-out ends every copy of a session, a rotated secret ends every session, and each browser has its own
CSRF token; on loopback the cookie is named for its port and sent only under /admin (issue 22)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from starlette.requests import Request

from crontick.admin import authorize, session
from crontick.app import create_app
from tests.support.admin_pages import (
    ADMIN_SECRET,
    OTHER_SECRET,
    add_jobs,
    client,
    cookie_of,
    csrf_of,
    running,
    settings_for,
    signed_in,
    status_of,
)
from tests.support.servers import free_port, serve


def _copy(base: str, of: httpx.Client) -> httpx.Client:
    """Another machine holding a copy of the browser's cookies (a shared computer, a proxy's log, a local server)."""
    other = client(base)
    other.cookies = httpx.Cookies(of.cookies)
    return other


def _session_cookie(c: httpx.Client, base: str) -> str:
    value = c.cookies.get(cookie_of(base), path="/admin")
    assert value, "expected the session cookie on /admin"
    return value


def test_sign_out_ends_every_copy_of_the_cookie(database_url: str) -> None:
    with running(settings_for(database_url)) as base:
        mine, theirs = signed_in(base), signed_in(base)
        copy = _copy(base, mine)
        assert copy.get("/admin").status_code == 200
        out = mine.post("/admin/logout")
        assert out.status_code == 303 and out.headers["location"] == "/admin/login?out=1"
        assert mine.get("/admin").status_code == 303
        assert copy.get("/admin").status_code == 303  # the copy is signed out too
        assert copy.get("/admin.json").status_code == 401
        assert copy.post("/admin/logout").status_code == 303  # signing out twice is harmless
        assert _copy(base, theirs).get("/admin").status_code == 200  # only that session ended
        assert signed_in(base).get("/admin").status_code == 200  # and signing in again works


def test_a_sign_out_is_kept_until_its_cookie_expires(database_url: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute("insert into crontick_admin_signouts values ('long-gone', now() - interval '2 hours')")
    with running(settings_for(database_url)) as base:
        assert signed_in(base).post("/admin/logout").status_code == 303
    rows = conn.execute("select session, expires_at - now() from crontick_admin_signouts").fetchall()
    assert len(rows) == 1 and rows[0][0] != "long-gone", rows  # the long-expired record went with it
    assert 7.9 * 3600 < rows[0][1].total_seconds() <= 8 * 3600


def test_a_rotated_secret_ends_old_cookies(database_url: str) -> None:
    s = settings_for(database_url)
    port = free_port()
    with serve(create_app(s), port) as base:
        browser = signed_in(base)
        assert browser.get("/admin").status_code == 200
    with serve(create_app(dataclasses.replace(s, admin_secret=OTHER_SECRET)), port) as base:
        assert browser.get("/admin").status_code == 303  # the same server, restarted with a new secret
        assert signed_in(base, OTHER_SECRET).get("/admin").status_code == 200


def test_each_session_has_its_own_csrf_token(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [job_id] = add_jobs(conn, 1)
    with running(settings_for(database_url)) as base:
        a, b = signed_in(base), signed_in(base)
        token_a = csrf_of(a.get(f"/admin/jobs/{job_id}").text)
        token_b = csrf_of(b.get(f"/admin/jobs/{job_id}").text)
        assert token_a != token_b
        refused = b.post(f"/admin/jobs/{job_id}/retry", data={"csrf": token_a, "confirm": "yes"})
        assert refused.status_code == 403 and status_of(conn, job_id) == "failed"


@pytest.fixture
def hook() -> Iterator[None]:
    async def from_header(request: Request) -> str | None:
        return "admin" if request.headers.get("x-app-user") == "alice" else None

    authorize(from_header)
    yield
    session._hook.clear()


def test_hook_sessions_get_a_csrf_token_per_browser_that_dies_with_the_secret(
    hook: None, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    [job_id] = add_jobs(conn, 1)
    alice = {"X-App-User": "alice"}
    s = settings_for(database_url)
    with running(s) as base:
        laptop, phone = client(base), client(base)
        first = laptop.get(f"/admin/jobs/{job_id}", headers=alice)
        token_laptop = csrf_of(first.text)
        token_phone = csrf_of(phone.get(f"/admin/jobs/{job_id}", headers=alice).text)
        assert token_laptop != token_phone
        assert first.status_code == 200 and cookie_of(base) + "_csrf" in first.headers["set-cookie"]
        assert csrf_of(laptop.get(f"/admin/jobs/{job_id}", headers=alice).text) == token_laptop  # kept per browser
        stranger = client(base)  # the token alone, without the browser's binding cookie, does nothing
        r = stranger.post(f"/admin/jobs/{job_id}/retry", data={"csrf": token_laptop, "confirm": "yes"}, headers=alice)
        assert r.status_code == 403 and status_of(conn, job_id) == "failed"
        binding = laptop.cookies.get(cookie_of(base) + "_csrf", path="/admin")
        assert binding
    with running(dataclasses.replace(s, admin_secret=OTHER_SECRET)) as base:
        moved = client(base)
        moved.cookies.set(cookie_of(base) + "_csrf", binding)
        r = moved.post(f"/admin/jobs/{job_id}/retry", data={"csrf": token_laptop, "confirm": "yes"}, headers=alice)
        assert r.status_code == 403 and status_of(conn, job_id) == "failed"
        fresh = csrf_of(moved.get(f"/admin/jobs/{job_id}", headers=alice).text)
        ok = moved.post(f"/admin/jobs/{job_id}/retry", data={"csrf": fresh, "confirm": "yes"}, headers=alice)
        assert ok.status_code == 303 and status_of(conn, job_id) == "pending"


def test_the_loopback_cookie_is_named_for_its_port_and_sent_only_under_admin(database_url: str) -> None:
    s = settings_for(database_url)
    with running(s) as base, running(s) as neighbour:
        c = client(base)
        assert "every local server, whatever its port" in c.get("/admin/login").text
        r = c.post("/admin/login", data={"secret": ADMIN_SECRET})
        set_cookies = r.headers.get_list("set-cookie")
        assert len(set_cookies) == 2, set_cookies
        port = base.rsplit(":", 1)[1]
        assert all(v.startswith(f"crontick_admin_{port}=v1.admin.") for v in set_cookies)
        assert sorted(v.split("Path=")[1].split(";")[0] for v in set_cookies) == ["/admin", "/admin.json"]
        for path in ["/admin", "/admin/jobs/1", "/admin.json"]:
            assert c.build_request("GET", path).headers.get("cookie"), path
        for path in ["/", "/api/health", "/administrator", "/app/admin"]:
            assert c.build_request("GET", path).headers.get("cookie") is None, path
        # The same secret on another port: its cookie has another name, so the two never mix.
        value = _session_cookie(c, base)
        other = httpx.Client(base_url=neighbour, follow_redirects=False, timeout=30)
        other.cookies.set(f"crontick_admin_{port}", value)
        assert other.get("/admin").status_code == 303
        assert cookie_of(neighbour) != cookie_of(base)


def test_pure_cookie_rules_over_https_are_unchanged() -> None:
    https = _request("https://admin.example/admin")
    assert session.cookie_name(https) == "__Host-crontick_admin" and session.cookie_paths(https) == ("/",)
    loop = _request("http://127.0.0.1:8123/admin")
    assert session.cookie_paths(loop) == ("/admin", "/admin.json")
    assert session.flash_cookie_name(loop) == "crontick_admin_8123_flash"
    value = session.issue(settings_for("x"), "admin", time.time())
    assert session.verify(settings_for("x"), value + "\u00b2", time.time()) is None


def _request(url: str) -> Request:
    scheme, rest = url.split("://", 1)
    host, _, path = rest.partition("/")
    return Request(
        {
            "type": "http",
            "method": "GET",
            "scheme": scheme,
            "path": "/" + path,
            "query_string": b"",
            "headers": [(b"host", host.encode())],
        }
    )
