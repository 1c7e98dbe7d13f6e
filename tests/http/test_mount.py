"""crontick under /ops over real HTTP: as a Starlette `Mount`, and as `uvicorn --root-path /ops` behind a proxy.

Every route answers under the prefix and nothing of crontick answers outside it; every href, action
and src of every admin page (walked after sign-in by following the links) starts with the prefix;
redirects, cookie paths, the 404 text, the OpenAPI servers, signed webhooks and the http kick all
carry it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import psycopg
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

import crontick
from crontick.admin.jobs import bulk
from crontick.app import create_app
from crontick.hooks.inbound import forget
from crontick.schedules import registry
from crontick.settings import Settings
from tests.support.admin_pages import ADMIN_SECRET, add_jobs, csrf_of, settings_for, urls_in
from tests.support.constants import TEST_SECRET
from tests.support.hooks import twilio_form, twilio_post
from tests.support.servers import serve
from tests.support.waiting import wait_until

PREFIX = "/ops"
HOOK = "t-mount-bearer"
HOOK_SECRET = "m" * 40
SCHEDULE = "mount-hourly"
# Each page of the admin the walk must reach by following links from the dashboard.
PAGES = ("/admin", "/admin/jobs", "/admin/reminders", "/admin/ticks", "/admin/schedules", "/admin/hooks")
PAGES += ("/admin/alerts", "/admin/overview")
WALK_LIMIT = 200


async def _host_home(request: Request) -> PlainTextResponse:
    return PlainTextResponse("the host app's own page")


def host_app(settings: Settings) -> Starlette:
    """A host app with a page of its own and crontick mounted at /ops."""
    return Starlette(routes=[Route("/", _host_home), Mount(PREFIX, app=create_app(settings))])


class BehindProxy(httpx.HTTPTransport):
    """What a reverse proxy in front of `uvicorn --root-path /ops` does: it serves /ops/… only and strips
    the prefix, so the app is asked for /admin and must write /ops/admin into everything it answers."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        raw = request.url.raw_path
        if raw != PREFIX.encode() and not raw.startswith((PREFIX + "/").encode()):
            return httpx.Response(404, text="this proxy serves /ops only", request=request)
        inner = httpx.Request(
            request.method,
            request.url.copy_with(raw_path=raw[len(PREFIX) :] or b"/"),
            headers=request.headers,
            stream=request.stream,
            extensions=request.extensions,
        )
        return super().handle_request(inner)


@contextmanager
def mounted(settings: Settings, how: str) -> Iterator[httpx.Client]:
    """A browser-like client (same-origin form posts, cookies) for crontick under /ops, mounted `how`."""
    if how == "mount":
        server, transport = serve(host_app(settings)), None
    else:
        server, transport = serve(create_app(settings), root_path=PREFIX), BehindProxy()
    with server as base:
        headers = {"Origin": base, "Sec-Fetch-Site": "same-origin"}
        with httpx.Client(base_url=base, transport=transport, headers=headers, timeout=30) as c:
            yield c


@pytest.fixture
def declared() -> Iterator[None]:
    crontick.inbound(HOOK, "t_mount.hooked", verify="bearer", secret=HOOK_SECRET)
    crontick.schedule(SCHEDULE, "0 * * * *", "t_mount.report")
    yield
    forget(HOOK)
    registry.unregister(SCHEDULE)


def _seed(c: httpx.Client, conn: psycopg.Connection[Any]) -> dict[str, int]:
    """Something on every page, each row made the way crontick makes it where that is cheap."""
    tick = c.post(PREFIX + "/api/cron/tick", headers={"Authorization": f"Bearer {TEST_SECRET}"})
    assert tick.status_code == 200, tick.text  # a tick row, and the schedule seen
    conn.execute(
        "update crontick_schedules set evaluated_until = evaluated_until - interval '2 hours', next_at = '-infinity'"
    )
    assert c.post(PREFIX + "/api/cron/tick", headers={"Authorization": f"Bearer {TEST_SECRET}"}).status_code == 200
    hooked = c.post(PREFIX + f"/api/hooks/{HOOK}", json={"n": 1}, headers={"Authorization": f"Bearer {HOOK_SECRET}"})
    assert hooked.status_code == 200, hooked.text
    [failed] = add_jobs(conn, 1, type="t_mount.broken")
    [pending] = conn.execute(
        "insert into jobs (type, payload, run_after) values ('t_mount.later', '{}', now() + interval '1 day') returning id"
    ).fetchone() or [0]
    [booking] = conn.execute(
        "insert into bookings (customer_name, starts_at) values ('Ada', now() + interval '3 hours') returning id"
    ).fetchone() or [0]
    conn.execute(
        "insert into reminder_sends (booking_id, kind, channel, status, attempts, max_attempts, last_error)"
        " values (%(b)s, '24h', 'console', 'failed', 4, 4, 'HTTP 500')",
        {"b": booking},
    )
    for subject in (f"job:{failed}", "reminder:1:24h", "scheduler"):
        conn.execute(
            "insert into crontick_alerts (event, subject, occurred_at, body, status, attempts)"
            " values ('job_failed', %(s)s, now(), '{}', 'failed', 1)",
            {"s": subject},
        )
    return {"failed": failed, "pending": pending}


def _sign_in(c: httpx.Client) -> httpx.Response:
    """From the dashboard's redirect to the login form to the page it sends back to."""
    gate = c.get(PREFIX + "/admin/jobs?status=failed")
    assert (
        gate.status_code == 303
        and gate.headers["location"] == "/ops/admin/login?next=%2Fops%2Fadmin%2Fjobs%3Fstatus%3Dfailed"
    )
    form = c.get(gate.headers["location"])
    assert form.status_code == 200
    assert [u for u in urls_in(form.text)] == [
        ("link", "href", "/ops/admin/static/admin.css"),
        ("form", "action", "/ops/admin/login"),
    ]
    assert 'name="next" value="/ops/admin/jobs?status=failed"' in form.text
    signed = c.post("/ops/admin/login", data={"secret": ADMIN_SECRET, "next": "/ops/admin/jobs?status=failed"})
    assert signed.status_code == 303 and signed.headers["location"] == "/ops/admin/jobs?status=failed"
    paths = sorted(v.split("Path=")[1].split(";")[0] for v in signed.headers.get_list("set-cookie"))
    assert paths == ["/ops/admin", "/ops/admin.json"]
    return c.get(signed.headers["location"])


def _walk(c: httpx.Client, start: list[str]) -> tuple[dict[str, str], list[str]]:
    """Every page reachable by GET links from `start`: {url: html}, and every action any of them posts to.
    Each URL a page names must start with /ops/; each page must answer 200."""
    seen: dict[str, str] = {}
    actions_seen: list[str] = []
    queue = list(start)
    while queue:
        url = queue.pop(0)
        if url in seen:
            continue
        assert len(seen) < WALK_LIMIT, f"the walk did not end within {WALK_LIMIT} pages"
        r = c.get(url)
        assert r.status_code == 200, (url, r.status_code, r.text[:300])
        seen[url] = r.text if r.headers["content-type"].startswith("text/html") else ""
        for tag, attribute, value in urls_in(seen[url]):
            assert value is not None and value.startswith(PREFIX + "/"), (url, tag, attribute, value)
            if tag == "form":
                actions_seen.append(value)
            elif value not in seen:
                queue.append(value)
    return seen, actions_seen


@pytest.mark.parametrize("how", ["mount", "root_path"])
def test_every_url_of_every_admin_page_stays_under_the_prefix(
    how: str, declared: None, database_url: str, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with mounted(settings_for(database_url, kick="off"), how) as c:
        ids = _seed(c, conn)
        landing = _sign_in(c)
        assert landing.status_code == 200 and "t_mount.broken" in landing.text
        pages, posts = _walk(c, ["/ops/admin", f"/ops/admin/jobs/{ids['pending']}"])
        visited = {url.split("?")[0] for url in pages}
        assert visited >= {PREFIX + p for p in PAGES} | {
            f"/ops/admin/jobs/{ids['failed']}",
            "/ops/admin/static/admin.css",
        }
        assert f"/ops/admin/jobs/{ids['pending']}/cancel" in posts and "/ops/admin/logout" in posts
        assert {f"/ops/admin/jobs/{ids['failed']}/retry", "/ops/admin/jobs/bulk-retry"} <= set(posts)
        assert any(p.startswith("/ops/admin/reminders/") and p.endswith("/24h/retry") for p in posts)
        assert "<code>/ops/api/cron/tick</code>" in pages["/ops/admin/ticks"]
        assert f"<code>/ops/api/hooks/{HOOK}</code>" in pages["/ops/admin/hooks"]

        # An action: the confirmation posts under the prefix, and the 303 and its flash stay there.
        job_page = f"/ops/admin/jobs/{ids['failed']}"
        csrf = csrf_of(pages[job_page])
        confirm = c.post(f"{job_page}/retry", data={"csrf": csrf, "back": job_page})
        assert confirm.status_code == 200
        assert {u for u in urls_in(confirm.text) if u[0] == "form"} >= {("form", "action", f"{job_page}/retry")}
        assert all(value and value.startswith("/ops/") for _, _, value in urls_in(confirm.text))
        done = c.post(f"{job_page}/retry", data={"csrf": csrf, "back": job_page, "confirm": "yes"})
        assert done.status_code == 303 and done.headers["location"] == job_page
        assert "Path=/ops/admin" in done.headers["set-cookie"]  # the flash
        assert "is pending again" in c.get(job_page).text
        assert conn.execute("select status from jobs where id = %s", (ids["failed"],)).fetchone() == ("pending",)
        # A return address outside the admin (the host app's own page) is refused for the admin's own.
        away = c.post(f"/ops/admin/jobs/{ids['pending']}/cancel", data={"csrf": csrf, "back": "/", "confirm": "yes"})
        assert away.status_code == 303 and away.headers["location"] == f"/ops/admin/jobs/{ids['pending']}"

        # A bulk retry that takes more than one request: its continuation redirect and page stay under /ops.
        monkeypatch.setattr(bulk, "BULK_CHUNK", 1)
        monkeypatch.setattr(bulk, "HOPS_PER_PAGE", 2)
        add_jobs(conn, 3, type="t_mount.bulk")
        fields = {"csrf": csrf, "type": "t_mount.bulk", "back": "/ops/admin/jobs?status=failed"}
        confirm = c.post("/ops/admin/jobs/bulk-retry", data=fields)
        assert ("form", "action", "/ops/admin/jobs/bulk-retry") in urls_in(confirm.text)
        max_id = confirm.text.split('name="max_id" value="')[1].split('"')[0]
        hop = c.post("/ops/admin/jobs/bulk-retry", data={**fields, "max_id": max_id, "confirm": "yes"})
        assert hop.status_code == 303 and hop.headers["location"].startswith("/ops/admin/jobs/bulk-retry/continue?")
        progress = c.get(hop.headers["location"])
        assert progress.status_code == 200 and "Retrying" in progress.text
        assert all(value and value.startswith("/ops/") for _, _, value in urls_in(progress.text))
        [(_, _, refresh)] = [u for u in urls_in(progress.text) if u[0] == "meta"]
        step = c.get(str(refresh))
        while step.headers["location"].startswith("/ops/admin/jobs/bulk-retry/continue?"):
            step = c.get(step.headers["location"])
        assert step.status_code == 303 and step.headers["location"] == "/ops/admin/jobs?status=failed"
        assert conn.execute(
            "select count(*) from jobs where type = 't_mount.bulk' and status = 'pending'"
        ).fetchone() == (3,)

        # Sign out: back to the login page under /ops, both cookies cleared on their own paths.
        out = c.post("/ops/admin/logout", data={"csrf": csrf})
        assert out.status_code == 303 and out.headers["location"] == "/ops/admin/login?out=1"
        cleared = sorted(v.split("Path=")[1].split(";")[0] for v in out.headers.get_list("set-cookie"))
        assert cleared == ["/ops/admin", "/ops/admin.json"]
        assert c.get("/ops/admin").status_code == 303


def test_only_the_prefix_is_crontick_s_and_its_answers_name_it(database_url: str) -> None:
    """Under Mount: the host keeps its own pages and 404s; crontick's 404s, redirects and OpenAPI name /ops."""
    with mounted(settings_for(database_url, kick="off"), "mount") as c:
        assert c.get("/").text == "the host app's own page"
        for method, path in [("GET", "/admin"), ("POST", "/api/cron/tick"), ("GET", "/api/health"), ("GET", "/nope")]:
            outside = c.request(method, path, headers={"Authorization": f"Bearer {TEST_SECRET}"})
            assert (outside.status_code, outside.text) == (404, "Not Found"), path  # Starlette's, not crontick's JSON
        tick = c.post("/ops/api/cron/tick", headers={"Authorization": f"Bearer {TEST_SECRET}"})
        assert tick.status_code == 200 and tick.json()["jobs"]["claimed"] == 0
        assert c.get("/ops/api/health").json()["ok"] is True
        assert c.get("/ops/").headers["location"] == "/ops/admin"
        missing = c.get("/ops/nothing")
        assert missing.status_code == 404 and missing.json() == {
            "error": "not_found",
            "detail": "nothing at /ops/nothing; the endpoints are /ops/api/cron/tick, /ops/api/health and "
            "/ops/api/hooks/{name}",
        }
        admin_missing = c.get("/ops/admin/nothing.json")
        assert admin_missing.status_code == 404 and "the admin starts at /ops/admin" in admin_missing.json()["detail"]
        page = c.get("/ops/admin/nothing")
        assert all(value and value.startswith("/ops/") for _, _, value in urls_in(page.text))
        assert c.get("/ops/admin/jobs.json").json()["detail"] == "sign in at /ops/admin/login first"
        doc = c.get("/ops/api/admin/openapi.json", headers={"Authorization": f"Bearer {ADMIN_SECRET}"}).json()
        assert doc["servers"] == [{"url": "/ops"}] and "/api/admin/jobs" in doc["paths"]


def test_over_https_under_a_prefix_the_cookie_keeps_to_the_admin_s_paths(database_url: str) -> None:
    """`__Host-` demands Path=/, so under /ops the cookie is `__Secure-` on /ops/admin and /ops/admin.json."""
    with mounted(settings_for(database_url, kick="off"), "mount") as c:
        # What a TLS-terminating proxy on this host forwards (uvicorn trusts 127.0.0.1's X-Forwarded-*).
        proxied = {"Host": "app.example", "X-Forwarded-Proto": "https", "Origin": "https://app.example"}
        r = c.post("/ops/admin/login", data={"secret": ADMIN_SECRET}, headers=proxied)
        assert r.status_code == 303 and r.headers["location"] == "/ops/admin"
        cookies = r.headers.get_list("set-cookie")
        assert all(v.startswith("__Secure-crontick_admin=v1.admin.") for v in cookies)
        assert all("Secure" in v and "HttpOnly" in v and "SameSite=strict" in v and "Domain" not in v for v in cookies)
        assert sorted(v.split("Path=")[1].split(";")[0] for v in cookies) == ["/ops/admin", "/ops/admin.json"]
        value = cookies[0].split(";", 1)[0].split("=", 1)[1]
        page = c.get("/ops/admin", headers={**proxied, "Cookie": f"__Secure-crontick_admin={value}"})
        assert page.status_code == 200 and "Sign out" in page.text


def test_signed_webhooks_and_the_http_kick_use_the_public_url_with_its_prefix(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """CRONTICK_PUBLIC_URL names where crontick is reached, /ops included: Twilio's signature is checked
    against it plus the path inside crontick, and the http kick calls it plus /api/cron/tick."""
    from tests.support.servers import free_port

    port = free_port()
    public = f"http://127.0.0.1:{port}{PREFIX}"
    settings = settings_for(database_url, kick="http", public_url=public)
    with serve(host_app(settings), port=port), httpx.Client() as c:
        hooked = twilio_post(c, public, twilio_form("SMmount1"), public_url=public)
        assert hooked.status_code == 200, hooked.text
        assert twilio_post(c, public, twilio_form("SMmount2"), public_url=f"http://127.0.0.1:{port}").status_code == 401
        wait_until(lambda: conn.execute("select source from crontick_ticks").fetchall() == [("token",)], timeout=5)
    assert conn.execute("select status from jobs").fetchall() == [("done",)]
