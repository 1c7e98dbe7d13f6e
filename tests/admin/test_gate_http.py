"""The admin pages over real HTTP: the gate, headers, JSON twins, CSRF, roles, actions with 303s, paging."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import psycopg
import pytest

from crontick.admin import session
from crontick.errors import ConfigError
from crontick.settings import Settings
from tests.support.admin_pages import (
    ADMIN_SECRET,
    OTHER_SECRET,
    SECURITY_HEADERS,
    VIEWER_SECRET,
    add_jobs,
    client,
    cookie_of,
    csrf_of,
    running,
    settings_for,
    signed_in,
    status_of,
)
from tests.support.constants import TEST_SECRET

PAGES = ["/admin", "/admin/jobs", "/admin/reminders", "/admin/ticks", "/admin/overview"]


def test_closed_until_the_admin_secret_is_set(database_url: str) -> None:
    with running(settings_for(database_url, admin_secret=None, admin_viewer_secret=None)) as base:
        c = client(base)
        for path in ["/admin", "/admin/login", "/admin/jobs.json"]:
            r = c.get(path)
            assert r.status_code == 404, path
        r = c.post("/admin/login", data={"secret": TEST_SECRET})
        assert r.status_code == 404


def test_cron_secret_never_opens_the_admin(database_url: str) -> None:
    env = {"DATABASE_URL": database_url, "CRON_SECRET": TEST_SECRET, "CRONTICK_ADMIN_SECRET": TEST_SECRET}
    with pytest.raises(ConfigError, match="CRON_SECRET"):
        Settings.from_env(env)
    # Even a Settings built by hand with the two equal keeps the admin closed.
    with running(settings_for(database_url, admin_secret=TEST_SECRET, admin_viewer_secret=None)) as base:
        assert client(base).get("/admin").status_code == 404
    with running(settings_for(database_url)) as base:
        r = client(base).post("/admin/login", data={"secret": TEST_SECRET})
        assert r.status_code == 401


def test_root_and_pages_redirect_to_login_then_open(database_url: str) -> None:
    with running(settings_for(database_url)) as base:
        c = client(base)
        assert c.get("/").headers["location"] == "/admin"
        r = c.get("/admin/jobs?status=failed")
        assert r.status_code == 303
        assert r.headers["location"] == "/admin/login?next=%2Fadmin%2Fjobs%3Fstatus%3Dfailed"
        assert c.get("/admin/jobs.json").status_code == 401
        login = c.get("/admin/login")
        assert 'name="secret"' in login.text and 'type="password"' in login.text
        started = time.monotonic()
        bad = c.post("/admin/login", data={"secret": "x" * 40})
        assert bad.status_code == 401 and time.monotonic() - started >= session.FAILED_LOGIN_DELAY_SECONDS
        ok = c.post("/admin/login", data={"secret": ADMIN_SECRET, "next": "/admin/jobs?status=failed"})
        assert ok.status_code == 303 and ok.headers["location"] == "/admin/jobs?status=failed"
        cookie = ok.headers["set-cookie"]
        # Over plain http on loopback: no Secure and no __Host- prefix, which browsers refuse there.
        assert cookie.startswith(f"{cookie_of(base)}=v1.admin.") and "HttpOnly" in cookie
        assert "SameSite=strict" in cookie and "Max-Age=28800" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie
        for path in PAGES:
            r = c.get(path)
            assert r.status_code == 200, (path, r.text[:300])
            assert "as of" in r.text
        assert (
            c.post("/admin/login", data={"secret": ADMIN_SECRET, "next": "https://evil.example/"}).headers["location"]
            == "/admin"
        )


def test_cookie_is_secure_and_host_prefixed_behind_a_tls_proxy(database_url: str) -> None:
    with running(settings_for(database_url)) as base:
        # What a TLS-terminating proxy on this host forwards (uvicorn trusts 127.0.0.1's X-Forwarded-*).
        proxied = {"Host": "admin.example", "X-Forwarded-Proto": "https", "Origin": "https://admin.example"}
        r = client(base).post("/admin/login", data={"secret": ADMIN_SECRET}, headers=proxied)
        cookie = r.headers["set-cookie"]
        assert r.status_code == 303 and cookie.startswith("__Host-crontick_admin=")
        assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert "Path=/" in cookie and "Domain" not in cookie
        c = client(base)
        c.cookies.set("__Host-crontick_admin", cookie.split(";", 1)[0].split("=", 1)[1])
        assert c.get("/admin", headers=proxied).status_code == 200


def test_every_admin_response_has_the_security_headers(database_url: str) -> None:
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        anon = client(base)
        responses = (
            [c.get(p) for p in PAGES]
            + [c.get(p + ".json") for p in PAGES]
            + [
                c.get("/admin/static/admin.css"),
                anon.get("/admin/login"),
                anon.get("/admin"),
                c.get("/admin/jobs/999999"),
                c.post("/admin/jobs/1/retry", data={}),
                c.get("/admin/nope"),
            ]
        )
        for r in responses:
            for name, value in SECURITY_HEADERS.items():
                assert r.headers.get(name) == value, (r.url, name)


def test_every_page_answers_json(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [job_id] = add_jobs(conn, 1, payload='{"user_id": 42}')
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        for path in PAGES + [f"/admin/jobs/{job_id}"]:
            by_suffix = c.get(path + ".json")
            by_accept = c.get(path, headers={"Accept": "application/json"})
            assert by_suffix.status_code == by_accept.status_code == 200, path
            assert by_suffix.headers["content-type"] == "application/json"
            assert "as_of" in by_suffix.json() and "as_of" in by_accept.json()
        detail = c.get(f"/admin/jobs/{job_id}.json").json()
        assert detail["job"]["payload"] == {"user_id": 42} and detail["job"]["history"] == []
        listed = c.get("/admin.json").json()
        assert [j["id"] for j in listed["jobs"]] == [job_id]
        assert c.get("/admin/jobs/424242.json").json()["error"] == "job_not_found"


def test_time_zone_display_and_a_bad_zone(database_url: str, conn: psycopg.Connection[Any]) -> None:
    add_jobs(conn, 1)
    conn.execute("update jobs set updated_at = '2026-07-01T12:00:00Z'")
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        assert "2026-07-01 12:00:00 UTC" in c.get("/admin").text
        amsterdam = c.get("/admin?tz=Europe/Amsterdam")
        assert "2026-07-01 14:00:00 CEST" in amsterdam.text
        assert "tz=Europe%2FAmsterdam" in amsterdam.text  # links keep the zone
        bad = c.get("/admin?tz=Mars/Olympus")
        assert bad.status_code == 200 and "Unknown time zone" in bad.text and "12:00:00 UTC" in bad.text


def test_user_text_is_escaped(database_url: str, conn: psycopg.Connection[Any]) -> None:
    evil = "<script>alert(1)</script>"
    [job_id] = add_jobs(conn, 1, type="x<img src=x onerror=alert(1)>", payload=json.dumps({"html": evil}), error=evil)
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        for path in ["/admin", f"/admin/jobs/{job_id}", "/admin/jobs?status=failed"]:
            html = c.get(path).text
            assert "<script>" not in html and "<img" not in html
            assert "&lt;script&gt;" in html


def _cookie_signed_with(secret: str, role: str = "admin") -> str:
    other = dataclasses.replace(Settings(), admin_secret=secret, admin_viewer_secret=None)
    return session.issue(other, role, time.time())


def test_cookies_signed_with_another_secret_expired_or_edited_are_refused(database_url: str) -> None:
    s = settings_for(database_url)
    with running(s) as base:
        c = client(base)
        for value in [
            _cookie_signed_with(OTHER_SECRET),
            session.issue(s, "admin", time.time() - session.SESSION_SECONDS - 5),  # expired
            session.issue(s, "viewer", time.time()).replace("v1.viewer.", "v1.admin."),  # role edited
            "v1.admin.9999999999.x.y",
        ]:
            c.cookies.set(cookie_of(base), value)
            assert c.get("/admin").status_code == 303
        c.cookies.set(cookie_of(base), session.issue(s, "admin", time.time()))
        assert c.get("/admin").status_code == 200


def test_rotating_the_secret_logs_everyone_out(database_url: str) -> None:
    s = settings_for(database_url)
    with running(s) as base:
        cookie = signed_in(base).cookies.get(cookie_of(base), path="/admin")
    with running(dataclasses.replace(s, admin_secret=OTHER_SECRET)) as base:
        c = client(base)
        c.cookies.set(cookie_of(base), cookie)
        assert c.get("/admin").status_code == 303
        assert signed_in(base, OTHER_SECRET).get("/admin").status_code == 200


def test_csrf_refusals(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [job_id] = add_jobs(conn, 1)
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        token = csrf_of(c.get(f"/admin/jobs/{job_id}").text)
        form = {"csrf": token, "confirm": "yes", "back": "/admin"}
        url = f"/admin/jobs/{job_id}/retry"
        cross_site = c.post(url, data=form, headers={"Sec-Fetch-Site": "cross-site"})
        same_site = c.post(url, data=form, headers={"Sec-Fetch-Site": "same-site"})
        no_token = c.post(url, data={"confirm": "yes"})
        forged = c.post(url, data={**form, "csrf": token[:-2] + "AA"})
        other_session = c.post(url, data={**form, "csrf": csrf_of(signed_in(base).get("/admin").text)})
        for r in (cross_site, same_site, no_token, forged, other_session):
            assert r.status_code == 403, r.text
        assert status_of(conn, job_id) == "failed"
        # No Sec-Fetch-Site (an older browser or a proxy that strips it): Origin decides.
        c.headers.pop("Sec-Fetch-Site")
        assert c.post(url, data=form, headers={"Origin": "https://evil.example"}).status_code == 403
        c.headers.pop("Origin")
        assert c.post(url, data=form).status_code == 403
        assert status_of(conn, job_id) == "failed"
        ok = c.post(url, data=form, headers={"Origin": base})
        assert ok.status_code == 303 and status_of(conn, job_id) == "pending"


def test_public_url_origin_is_accepted_behind_a_proxy(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [job_id] = add_jobs(conn, 1)
    with running(settings_for(database_url, public_url="https://jobs.example.com")) as base:
        c = signed_in(base)
        token = csrf_of(c.get("/admin").text)
        c.headers.pop("Sec-Fetch-Site")
        r = c.post(
            f"/admin/jobs/{job_id}/retry",
            data={"csrf": token, "confirm": "yes"},
            headers={"Origin": "https://jobs.example.com"},
        )
        assert r.status_code == 303 and status_of(conn, job_id) == "pending"


def test_viewer_sees_no_buttons_and_its_posts_get_403(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [job_id] = add_jobs(conn, 1)
    with running(settings_for(database_url)) as base:
        c = signed_in(base, VIEWER_SECRET)
        page = c.get(f"/admin/jobs/{job_id}")
        assert page.status_code == 200 and ">Retry<" not in page.text and "viewer" in page.text
        token = csrf_of(page.text)  # the sign-out form's token
        for path in [
            f"/admin/jobs/{job_id}/retry",
            f"/admin/jobs/{job_id}/delete",
            "/admin/jobs/bulk-retry",
            "/admin/reminders/1/24h/retry",
        ]:
            r = c.post(path, data={"csrf": token, "confirm": "yes"})
            assert r.status_code == 403, path
        assert status_of(conn, job_id) == "failed"


def test_a_slow_panel_says_unavailable_not_500(database_url: str, conn: psycopg.Connection[Any]) -> None:
    add_jobs(conn, 1)
    with running(settings_for(database_url)) as base, psycopg.connect(database_url) as locker:
        c = signed_in(base)
        locker.execute("lock table jobs in access exclusive mode")  # held until this block ends
        r = c.get("/admin")
        assert r.status_code == 200 and "unavailable right now" in r.text


def test_counts_are_capped_and_refresh_is_opt_in_at_30_seconds(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    add_jobs(conn, 10_001, type="many", status="done", error=None)
    add_jobs(conn, 10_000, type="many", status="pending", error=None)
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        page = c.get("/admin/overview")
        assert '<span class="n">10,000+</span><span class="l">done</span>' in page.text
        assert '<span class="n">10,000</span><span class="l">pending</span>' in page.text
        assert 'http-equiv="refresh"' not in page.text
        assert '<meta http-equiv="refresh" content="30">' in c.get("/admin/overview?refresh=30").text
        stats = c.get("/admin/overview.json").json()["stats"]
        assert stats["jobs"]["done"] == 10_001 and stats["capped"]["done"] is True


def test_odd_urls_answer_4xx_never_500(database_url: str) -> None:
    huge = "9" * 30
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        token = csrf_of(c.get("/admin").text)
        answers = [
            c.get(f"/admin/jobs/{huge}"),
            c.get(f"/admin/jobs?id={huge}"),
            c.get("/admin/jobs?id=abc"),
            c.get("/admin?tz=../../etc/passwd"),
            c.get("/admin/jobs?payload=[1,2]"),
            c.get("/admin/reminders?status=bogus&cursor=%%%"),
            c.get("/admin/jobs/bulk-retry/continue?state=x&sig=y"),
            c.post(f"/admin/jobs/{huge}/retry", data={"csrf": token, "confirm": "yes"}),
            c.post("/admin/jobs/1/explode", data={"csrf": token}),
            c.post(f"/admin/reminders/{huge}/24h/retry", data={"csrf": token, "confirm": "yes"}),
        ]
        for r in answers:
            assert r.status_code < 500, (r.request.url, r.status_code, r.text[:200])
