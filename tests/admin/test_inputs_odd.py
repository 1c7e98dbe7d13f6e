"""Odd input never makes the admin answer 500 (issue 22): ids past 4,300 digits, odd cookies, every bad parameter."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

import httpx
import psycopg

from crontick.admin import session
from tests.admin.api_support import API_ADMIN_SECRET
from tests.support.admin_pages import (
    ADMIN_SECRET,
    add_jobs,
    cookie_of,
    csrf_of,
    running,
    settings_for,
    signed_in,
)

HUGE = "1" * 4301  # one digit past what int() takes (FACTS.md)
DEEP = "[" * 2000 + "]" * 2000  # past Python's recursion limit, well inside every length cap
BEARER = {"Authorization": f"Bearer {ADMIN_SECRET}"}
SAME_ORIGIN = {"Sec-Fetch-Site": "same-origin"}


def _send(base: str, method: str, path: str, **kw: Any) -> httpx.Response:
    """One request on its own connection: a 500 makes uvicorn drop the connection it came on."""
    with httpx.Client(base_url=base, timeout=30, follow_redirects=False) as c:
        return c.request(method, path, **kw)


def _no_5xx(r: httpx.Response) -> None:
    assert r.status_code < 500, (r.request.method, str(r.request.url)[:120], r.status_code, r.text[:300])
    assert "Traceback" not in r.text


def _cookie_header(base: str, value: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"cookie", cookie_of(base).encode() + b"=" + value)]


def test_unauthenticated_odd_ids_and_cookies_are_404_or_a_login_redirect(database_url: str) -> None:
    with running(settings_for(database_url)) as base:
        for path in [f"/admin/jobs/{HUGE}", f"/admin/jobs/{HUGE[:19]}0", "/admin/jobs/%C2%B2"]:
            r = _send(base, "GET", path)
            _no_5xx(r)
            assert r.status_code == 303 and r.headers["location"].startswith("/admin/login?next="), path
        r = _send(base, "GET", f"/admin/jobs/{HUGE}.json")
        assert r.status_code == 401 and r.json()["error"] == "unauthorized"
        for path in [f"/admin/jobs/{HUGE}/retry", f"/admin/reminders/{HUGE}/24h/retry", "/admin/jobs/%C2%B2/retry"]:
            r = _send(base, "POST", path, headers=SAME_ORIGIN)
            _no_5xx(r)
            assert r.status_code == 404, (path, r.status_code)
        cookies = [
            b"v1.admin." + b"9" * 5000 + b".nonce.mac",  # an expiry int() refuses
            b"v1.admin.\xb2.nonce.mac",  # '\xb2' is '\u00b2' to the server: a digit to isdigit(), not to int()
            b"v1.admin.9999999999.nonce.\xb2\xb2",  # a MAC that compare_digest refuses as str
            b"\xff" * 100,
        ]
        for value in cookies:
            r = _send(base, "GET", "/admin", headers=_cookie_header(base, value))
            _no_5xx(r)
            assert r.status_code == 303 and r.headers["location"].startswith("/admin/login"), value[:20]
        for path in [f"/api/admin/jobs/{HUGE}", "/api/admin/jobs/%C2%B2"]:
            r = _send(base, "GET", path, headers=BEARER)
            assert r.status_code == 404 and r.json()["error"] == "not_found", (path, r.text[:200])
        for verb in ("retry", "cancel", "delete"):
            r = _send(base, "POST", f"/api/admin/jobs/{HUGE}/{verb}", headers=BEARER)
            assert r.status_code == 404 and r.json()["error"] == "not_found"


# (path, what the detail says): each a 400, as a page for a browser and as JSON for `.json`.
BAD_PAGE_PARAMETERS = [
    ("/admin?tz=America", "tz: expected a zone inside the region, such as America/"),
    ("/admin?tz=" + "A" * 300, "tz: expected an IANA time zone"),
    ("/admin/ticks?tz=%00", "tz: expected an IANA time zone"),
    ("/admin/overview?tz=../../etc/passwd", "tz: expected an IANA time zone"),
    ("/admin/reminders?refresh=%00", "refresh: expected one of 30"),
    ("/admin/jobs?type=%00", "type: expected text of at most 200 characters without NUL"),
    ("/admin/jobs?type=" + "t" * 201, "type: expected text of at most 200 characters"),
    ("/admin/jobs?id=%C2%B2", "expected a job id (digits)"),
    ("/admin/jobs?id=" + "9" * 5000, "expected a job id (digits)"),
    ("/admin/reminders?status=bogus", "status: expected one of sending, sent, failed, unknown"),
    ("/admin/alerts?status=%00", "status: expected one of"),
    ("/admin/hooks?hook=%00", "hook: expected text of at most 63 characters without NUL"),
    ("/admin/hooks?hook=" + "h" * 64, "hook: expected text of at most 63 characters"),
]
# The payload filter stays a message on the Jobs page itself (with its form), with status 400.
BAD_PAYLOADS = [
    ('{"a":' + DEEP + "}", "nested at most 32 levels deep"),
    ('{"a": "\\u0000"}', "without \\u0000 or lone surrogates"),
    ('{"\\ud800": 1}', "without \\u0000 or lone surrogates"),
    ('{"a": NaN}', "not a JSON number"),
    ('{"a": 1e999}', "finite JSON numbers"),
    ("x" * 4097, "payload: expected text of at most 4096 characters"),
]


def test_signed_in_bad_parameters_are_400_with_what_was_expected(database_url: str) -> None:
    with running(settings_for(database_url)) as base:
        jar = signed_in(base).cookies.jar
        headers = [(b"cookie", "; ".join(f"{k.name}={k.value}" for k in jar if k.path in ("/", "/admin")).encode())]
        for path, detail in BAD_PAGE_PARAMETERS:
            page = _send(base, "GET", path, headers=headers)
            _no_5xx(page)
            assert page.status_code == 400 and "text/html" in page.headers["content-type"], (path, page.status_code)
            as_json = _send(base, "GET", path, headers=[*headers, (b"accept", b"application/json")])
            assert as_json.status_code == 400, path
            body = as_json.json()
            assert body["error"] in ("bad_parameter", "bad_id") and detail in body["detail"], (path, body)
            assert "got: " in body["detail"] and len(body["detail"]) < 300, body
        for payload, detail in BAD_PAYLOADS:
            r = _send(base, "GET", "/admin/jobs?payload=" + quote(payload), headers=headers)
            _no_5xx(r)
            assert r.status_code == 400 and detail in r.text.replace("&#34;", '"').replace("&#39;", "'"), payload[:30]
        # A zone this server does not know (perhaps newer than its tz database) still opens the page.
        assert _send(base, "GET", "/admin?tz=Mars/Olympus", headers=headers).status_code == 200
        # Cursors are opaque: one the admin did not issue starts from the newest row, never a 500.
        for cursor in [base64.urlsafe_b64encode(DEEP.encode()).decode(), _event_cursor("\u0000"), "%00", HUGE]:
            for path in ["/admin/hooks", "/admin/jobs", "/admin/alerts"]:
                r = _send(base, "GET", f"{path}?cursor={cursor}", headers=headers)
                assert r.status_code == 200, (path, cursor[:20], r.text[:200])


def _event_cursor(hook: str, at: str = "0001-01-01T00:00:00+14:00") -> str:
    return base64.urlsafe_b64encode(json.dumps(["e1", at, hook, "x"]).encode()).decode()


def test_bad_form_fields_and_a_deep_bulk_state_are_refused_not_500(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    add_jobs(conn, 2)
    settings = settings_for(database_url)
    with running(settings) as base:
        c = signed_in(base)
        token = csrf_of(c.get("/admin/jobs?status=failed").text)
        forms = [
            ({"payload": '{"a":' + DEEP + "}"}, "nested at most 32 levels deep"),
            ({"payload": '{"a": "\\u0000"}'}, "cannot be stored by PostgreSQL"),
            ({"type": "a\x00b"}, "type: expected text of at most 200 characters without NUL"),
            ({"confirm": "yes", "max_id": "\u00b2"}, "max_id: expected an id"),
            ({"confirm": "yes", "max_id": "9" * 5000}, "max_id: expected an id"),
        ]
        for fields, detail in forms:
            r = c.post("/admin/jobs/bulk-retry", data={"csrf": token, **fields}, headers={"Accept": "application/json"})
            _no_5xx(r)
            assert r.status_code == 400 and detail in r.json()["detail"], (fields, r.text[:300])
        r = c.post("/admin/reminders/1/%00/retry", data={"csrf": token, "confirm": "yes"})
        _no_5xx(r)
        assert r.status_code == 404
        # A continuation link with a 2,000-deep state, even one signed for this very session.
        cookie = c.cookies.get(cookie_of(base), path="/admin")
        assert cookie
        sess = session.Session("admin", session.csrf_token(settings, "admin", cookie))
        for packed in ["A" * 10 + base64.urlsafe_b64encode(DEEP.encode()).decode(), _pack_deep()]:
            sig = session.sign(settings, sess, "bulk." + packed)
            for given in (sig, "forged"):
                r = c.get("/admin/jobs/bulk-retry/continue", params={"state": packed, "sig": given})
                _no_5xx(r)
                assert r.status_code == 403, r.text[:200]


def _pack_deep() -> str:
    return base64.urlsafe_b64encode(DEEP.encode()).decode().rstrip("=")


def test_the_api_refuses_deep_json_and_nul_with_400(database_url: str) -> None:
    settings = settings_for(database_url, admin_secret=API_ADMIN_SECRET, admin_viewer_secret=None)
    bearer = {"Authorization": f"Bearer {API_ADMIN_SECRET}"}
    with running(settings) as base:
        for path, detail in [
            ("/api/admin/jobs?payload=" + quote('{"a":' + DEEP + "}"), "payload: expected JSON nested at most 32"),
            ("/api/admin/jobs?payload=" + quote('{"a": "\\u0000"}'), "payload: expected JSON strings without"),
            ("/api/admin/jobs?payload=" + quote('{"a": NaN}'), "payload: expected a JSON object"),
            ("/api/admin/jobs?type=%00", "type: expected text"),
            ("/api/admin/hooks?hook=%00", "hook: expected text"),
            ("/api/admin/hooks?cursor=" + base64.urlsafe_b64encode(DEEP.encode()).decode(), "cursor"),
            ("/api/admin/hooks?cursor=" + _event_cursor("\u0000"), "cursor"),
            ("/api/admin/reminders?status=%00", "status: expected"),
            ("/api/admin/alerts?limit=" + "9" * 5000, "limit: expected an integer"),
        ]:
            r = _send(base, "GET", path, headers=bearer)
            _no_5xx(r)
            assert r.status_code == 400 and detail in r.json()["detail"], (path[:60], r.text[:300])
        for body in ['{"payload": {"a":' + DEEP + "}}", DEEP, '{"payload": {"a": "\\u0000"}}']:
            r = _send(base, "POST", "/api/admin/jobs/retry", headers=bearer, content=body)
            _no_5xx(r)
            assert r.status_code == 400 and r.json()["error"] == "bad_request", (body[:30], r.text[:300])
