"""The admin in a real browser (Debian's chromium via Playwright), with JavaScript on and off."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import psycopg
import pytest

import crontick
from tests.support.admin_pages import (
    ADMIN_SECRET,
    OTHER_SECRET,
    VIEWER_SECRET,
    add_jobs,
    cookie_of,
    running,
    settings_for,
    status_of,
)
from tests.support.constants import ROOT, TEST_SECRET

# Serial (make test runs it alone): a chromium per test beside other workers on 2 cores once left the jobs list
# without its "older" link, so the paging journey saw one page of its 130 rows.
pytestmark = pytest.mark.serial

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = ROOT / ".crontick" / "screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

try:
    from playwright.sync_api import Browser, Page, sync_playwright
except ImportError:  # pragma: no cover - dev extras not installed
    sync_playwright = None  # type: ignore[assignment]

if sync_playwright is None or not Path(CHROMIUM).exists():
    reason = (
        "no chromium at /usr/bin/chromium (apt-get install chromium; .ci/run does)"
        if sync_playwright is not None
        else "the playwright package is not installed (pip install -e '.[dev]')"
    )
    if os.environ.get("CRONTICK_REQUIRE_CHROMIUM") == "1":
        raise RuntimeError(f"admin browser journeys cannot run: {reason} (CRONTICK_REQUIRE_CHROMIUM=1)")
    print(f"\nskipping the admin browser journeys: {reason}")
    pytest.skip(
        f"admin browser journeys: {reason} (CI sets CRONTICK_REQUIRE_CHROMIUM=1 and fails instead)",
        allow_module_level=True,
    )

FLAKY = {"fail": True}


@crontick.handler("admin_browser_flaky")
def _flaky(payload: Any, job: Any) -> None:
    if FLAKY["fail"]:
        raise RuntimeError("the provider said no <script>alert('x')</script>")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _page(browser: Browser, js: bool, viewport: dict[str, int] = DESKTOP) -> Page:
    context = browser.new_context(java_script_enabled=js, viewport=viewport)  # type: ignore[arg-type]
    context.set_default_timeout(15_000)
    return context.new_page()


def _login(page: Page, base: str, secret: str = ADMIN_SECRET) -> None:
    page.goto(base + "/admin")
    assert "/admin/login" in page.url
    page.fill("input[name=secret]", secret)
    page.click("button[type=submit]")


def _shot(page: Page, name: str, *, full: bool = True) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full)


def _tick(base: str) -> dict[str, Any]:
    r = httpx.post(base + "/api/cron/tick", headers={"Authorization": f"Bearer {TEST_SECRET}"}, timeout=30)
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()
    return result


@pytest.mark.slow
@pytest.mark.parametrize("js", [True, False], ids=["js", "nojs"])
def test_login_wrong_secret_logout_and_rotation(browser: Browser, database_url: str, js: bool) -> None:
    s = settings_for(database_url)
    with running(s) as base:
        page = _page(browser, js)
        _login(page, base, "not-the-secret-" + "x" * 30)
        assert "/admin/login" in page.url and page.get_by_text("That secret opens nothing here.").is_visible()
        if js:
            _shot(page, "login")
        page.fill("input[name=secret]", ADMIN_SECRET)
        page.click("button[type=submit]")
        assert page.url == base + "/admin"
        assert page.get_by_role("heading", name="Failed jobs").is_visible()
        page.click("text=Sign out")
        assert "/admin/login" in page.url and page.get_by_text("You are signed out.").is_visible()
        page.goto(base + "/admin/jobs")
        assert "/admin/login" in page.url
        _login(page, base)
        assert page.url == base + "/admin"
        cookies = page.context.cookies()
        old_name = cookie_of(base)
    import dataclasses

    with running(dataclasses.replace(s, admin_secret=OTHER_SECRET)) as base:
        # Same cookie, rotated secret: signed out. (The new server has a new port, and the loopback
        # cookie's name carries the port: move the cookie there under the new name.)
        moved = [
            {"name": cookie_of(base), "value": c["value"], "domain": "127.0.0.1", "path": c["path"]}
            for c in cookies
            if c["name"] == old_name
        ]
        assert moved, "expected the session cookie among the browser's cookies"
        page.context.add_cookies(moved)  # type: ignore[arg-type]
        page.goto(base + "/admin")
        assert "/admin/login" in page.url
        _login(page, base, OTHER_SECRET)
        assert page.url == base + "/admin"
    page.context.close()


@pytest.mark.slow
@pytest.mark.parametrize("js", [True, False], ids=["js", "nojs"])
def test_failed_job_retry_then_tick_done(
    browser: Browser, database_url: str, conn: psycopg.Connection[Any], js: bool
) -> None:
    FLAKY["fail"] = True
    job_id = crontick.enqueue(
        conn, "admin_browser_flaky", {"order": 7, "note": "<script>alert(1)</script>"}, max_attempts=1
    )
    add_jobs(conn, 3, type="send_email", error="SMTP 550: mailbox unavailable")
    with running(settings_for(database_url)) as base:
        assert _tick(base)["jobs"]["failed"] == 1
        page = _page(browser, js)
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        _login(page, base)
        row = page.locator("tr", has=page.locator(f"a:text-is('#{job_id}')"))
        assert "admin_browser_flaky" in row.inner_text() and "the provider said no" in row.inner_text()
        if js:
            _shot(page, "failed")
            page.set_viewport_size(PHONE)
            _shot(page, "failed-phone")
            page.set_viewport_size(DESKTOP)
        page.click(f"a:text-is('#{job_id}')")
        assert page.url.endswith(f"/admin/jobs/{job_id}")
        assert page.locator("pre.code").first.inner_text().count("<script>alert(1)</script>") == 1
        history = page.locator("table.list tbody tr")
        assert history.count() == 1 and "failed" in history.first.inner_text()
        if js:
            _shot(page, "job")
        page.click("button:text-is('Retry')")
        assert page.get_by_role("heading", name=f"Retry job #{job_id}?").is_visible()
        page.click("button:text-is('Retry')")  # the confirmation's button
        assert page.url.endswith(f"/admin/jobs/{job_id}")
        assert page.get_by_text(f"Job #{job_id} is pending again.").is_visible()
        assert page.locator("h1 .badge").inner_text() == "pending"
        assert page.locator("table.list tbody tr").count() == 1  # history kept
        FLAKY["fail"] = False
        assert _tick(base)["jobs"]["succeeded"] == 1
        page.click("text=Refresh")
        assert page.locator("h1 .badge").inner_text() == "done"
        outcomes = [r.inner_text() for r in page.locator("table.list tbody tr td:nth-child(4)").all()]
        assert outcomes == ["failed", "succeeded"]
        assert dialogs == []  # the payload's and the error's <script> never ran
        if js:
            for path, name in [("/admin/overview", "overview"), ("/admin/ticks", "ticks"), ("/admin/jobs", "jobs")]:
                page.goto(base + path)
                _shot(page, name)
        page.context.close()
    assert status_of(conn, job_id) == "done"


@pytest.mark.slow
@pytest.mark.parametrize("js", [True, False], ids=["js", "nojs"])
def test_cancel_a_running_job_from_its_page(
    browser: Browser, database_url: str, conn: psycopg.Connection[Any], js: bool
) -> None:
    job_id = crontick.enqueue(conn, "admin_browser_long", {}, start_by=600)
    conn.execute(
        "update jobs set status = 'running', attempts = 1, started_at = now(),"
        " locked_until = now() + interval '5 minutes' where id = %(id)s",
        {"id": job_id},
    )
    with running(settings_for(database_url)) as base:
        page = _page(browser, js)
        _login(page, base)
        page.goto(f"{base}/admin/jobs/{job_id}")
        assert page.locator("h1 .badge").inner_text() == "running"
        assert page.get_by_text("Start by").is_visible()
        page.click("button:text-is('Cancel')")
        assert page.get_by_role("heading", name=f"Cancel job #{job_id}?").is_visible()
        page.click("button:text-is('Cancel job')")  # the confirmation's button
        assert page.url.endswith(f"/admin/jobs/{job_id}")
        assert page.get_by_text(f"Job #{job_id} is asked to stop: it ends cancelled at its next step.").is_visible()
        assert page.get_by_text("Cancel asked").is_visible()
        assert page.locator("button:text-is('Cancel')").count() == 0
        page.context.close()
    row = conn.execute("select status, cancel_requested_at from jobs where id = %(id)s", {"id": job_id}).fetchone()
    assert row is not None and row[0] == "running" and row[1] is not None


def test_mounted_at_ops_in_a_host_app(browser: Browser, database_url: str, conn: psycopg.Connection[Any]) -> None:
    """Under a host app's Mount("/ops"): the browser never asks for anything outside /ops, and the
    cookie it keeps is on /ops/admin; sign in, the stylesheet, a job, its Retry and sign out all work."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from crontick.app import create_app
    from tests.support.servers import serve

    [job_id] = add_jobs(conn, 1, type="send_email", error="SMTP 550: mailbox unavailable")
    host = Starlette(routes=[Mount("/ops", app=create_app(settings_for(database_url)))])
    with serve(host) as base:
        page = _page(browser, js=True)
        asked: list[tuple[str, int]] = []
        page.on("response", lambda r: asked.append((r.url, r.status)))
        page.goto(base + "/ops/admin")
        assert page.url.startswith(base + "/ops/admin/login?next=")
        page.fill("input[name=secret]", ADMIN_SECRET)
        page.click("button[type=submit]")
        assert page.url == base + "/ops/admin"
        assert page.locator("header.top").evaluate("e => getComputedStyle(e).display") == "flex"  # styled
        page.click(f"a:text-is('#{job_id}')")
        assert page.url == base + f"/ops/admin/jobs/{job_id}"
        page.click("button:text-is('Retry')")
        page.click("button:text-is('Retry')")  # the confirmation's button
        assert page.get_by_text(f"Job #{job_id} is pending again.").is_visible()
        assert {c["path"] for c in page.context.cookies() if c["name"] == cookie_of(base)} == {
            "/ops/admin",
            "/ops/admin.json",
        }
        page.click("text=Jobs")
        assert page.url.startswith(base + "/ops/admin/jobs")
        page.click("text=Sign out")
        assert page.url == base + "/ops/admin/login?out=1"
        page.context.close()
    assert status_of(conn, job_id) == "pending"
    assert asked and all(url.startswith(base + "/ops/") for url, _ in asked), asked
    assert all(status < 400 for _, status in asked), asked
    assert (base + "/ops/admin/static/admin.css", 200) in asked


def test_sign_in_never_returns_to_the_host_app_s_pages(browser: Browser, database_url: str) -> None:
    """Chromium resolves a Location of `/ops/admin/../../signup` to the host app's `/signup`: the
    sign-in must answer the admin's home instead, whichever way the dot-segments are written."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    from crontick.app import create_app
    from tests.support.servers import serve

    async def signup(request: Any) -> PlainTextResponse:
        return PlainTextResponse("the host app's sign-up page")

    host = Starlette(routes=[Route("/signup", signup), Mount("/ops", app=create_app(settings_for(database_url)))])
    with serve(host) as base:
        for hostile in ("/ops/admin/../../signup", "/ops/admin/%2e%2e/%2e%2e/signup", "/ops/admin/..%5c..%5csignup"):
            page = _page(browser, js=True)
            page.goto(base + "/ops/admin/login?next=" + quote(hostile, safe=""))
            page.fill("input[name=secret]", ADMIN_SECRET)
            page.click("button[type=submit]")
            assert page.url == base + "/ops/admin", hostile
            assert page.get_by_role("heading", name="Failed jobs").is_visible()
            page.context.close()


def test_bulk_retry_of_1200_jobs_without_javascript(
    browser: Browser, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    targets = add_jobs(conn, 1200, type="nightly_report")
    add_jobs(conn, 40, type="send_email")
    add_jobs(conn, 10, type="nightly_report", status="done", error=None)
    with running(settings_for(database_url)) as base:
        page = _page(browser, js=False)
        _login(page, base)
        page.click("text=Jobs")
        page.select_option("select[name=status]", "failed")
        page.fill("input[name=type]", "nightly_report")
        page.click("button:text-is('Filter')")
        assert "status=failed" in page.url and "type=nightly_report" in page.url
        page.click("text=Retry everything this filter matches…")
        assert page.get_by_role("heading", name="Retry 500+ failed jobs?").is_visible()
        assert page.get_by_text(f"up to job #{targets[-1]}").is_visible()
        page.click("button:text-is('Retry 500+ jobs')")
        assert page.get_by_text("Retried 1,200 failed jobs.").is_visible()
        assert "status=failed" in page.url and "type=nightly_report" in page.url
        assert page.get_by_text("No jobs match.").is_visible()
        page.context.close()
    counts = dict(conn.execute("select type || ':' || status, count(*) from jobs group by 1").fetchall())
    assert counts == {"nightly_report:pending": 1200, "nightly_report:done": 10, "send_email:failed": 40}


def test_paging_130_rows_while_rows_are_inserted(
    browser: Browser, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    first = add_jobs(conn, 130, type="paged", status="done", error=None)
    with running(settings_for(database_url)) as base:
        page = _page(browser, js=False)
        _login(page, base)
        page.goto(base + "/admin/jobs?type=paged")
        seen: list[int] = []
        while True:
            seen += [
                int(t.removeprefix("#")) for t in page.locator("table.list tbody td:first-child a").all_inner_texts()
            ]
            add_jobs(conn, 11, type="paged", status="done", error=None)
            older = page.locator("a[rel=next]")
            if older.count() == 0:
                break
            older.click()
        assert seen == sorted(first, reverse=True)
        page.context.close()


def test_viewer_role_sees_and_cannot_act(browser: Browser, database_url: str, conn: psycopg.Connection[Any]) -> None:
    [job_id] = add_jobs(conn, 1)
    with running(settings_for(database_url)) as base:
        page = _page(browser, js=True)
        _login(page, base, VIEWER_SECRET)
        assert page.locator(".role").inner_text().lower() == "viewer"
        page.goto(f"{base}/admin/jobs/{job_id}")
        assert page.locator("button:text-is('Retry')").count() == 0
        token = page.locator("input[name=csrf]").first.get_attribute("value")
        status = page.evaluate(
            """async ([url, token]) => (await fetch(url, {method: 'POST', body: new URLSearchParams(
                {csrf: token, confirm: 'yes'})})).status""",
            [f"/admin/jobs/{job_id}/retry", token],
        )
        assert status == 403
        page.context.close()
    assert status_of(conn, job_id) == "failed"


class _AttackerPage(BaseHTTPRequestHandler):
    target = ""

    def do_GET(self) -> None:
        body = (
            f'<form id="f" method="post" action="{self.target}"><input name="confirm" value="yes">'
            '<input name="csrf" value="guessed"><button>Win a prize</button></form>'
            "<script>document.getElementById('f').submit()</script>"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_form_auto_submitted_from_another_origin_gets_403(
    browser: Browser, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    [job_id] = add_jobs(conn, 1)
    with running(settings_for(database_url)) as base:
        page = _page(browser, js=True)
        _login(page, base)
        handler = type("Attacker", (_AttackerPage,), {"target": f"{base}/admin/jobs/{job_id}/retry"})
        other = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=other.serve_forever, daemon=True).start()
        try:
            with page.expect_response(lambda r: r.url.endswith(f"/admin/jobs/{job_id}/retry")) as answer:
                page.goto(f"http://localhost:{other.server_address[1]}/")
            assert answer.value.status == 403
            assert answer.value.request.headers.get("origin", "").startswith("http://localhost")
        finally:
            other.shutdown()
        page.context.close()
    assert status_of(conn, job_id) == "failed"


def _seed_a_working_day(conn: psycopg.Connection[Any]) -> int:
    """A day of a small app: finished and failed jobs with attempts, 15-minute ticks with a gap, reminders."""
    conn.execute("""
        insert into jobs (type, payload, status, attempts, max_attempts, finished_at, updated_at, created_at)
        select (array['send_email', 'webhook', 'nightly_report', 'send_sms'])[1 + g % 4],
               jsonb_build_object('order_id', 1000 + g), 'done', 1, 4,
               now() - g * interval '20 min', now() - g * interval '20 min', now() - g * interval '20 min' - interval '3 s'
        from generate_series(1, 60) g""")
    conn.execute("""
        insert into jobs (type, payload, status, run_after, created_at, updated_at)
        select 'send_email', jsonb_build_object('user_id', 40 + g, 'template', 'welcome'), 'pending',
               now() + g * interval '7 min', now(), now()
        from generate_series(1, 8) g""")
    failures = [
        (
            "send_email",
            {"user_id": 42, "template": "invoice"},
            "SMTP 550 5.1.1 <ana@example.com>: Recipient address rejected: user unknown",
        ),
        (
            "webhook",
            {"url": "https://hooks.example.com/orders", "order_id": 1187},
            "POST https://hooks.example.com/orders answered 502 Bad Gateway after 10.0 s",
        ),
        (
            "send_sms",
            {"booking_id": 311, "to": "+31612345678"},
            "Twilio error 21211: The 'To' number +31612345678 is not a valid phone number.",
        ),
        (
            "nightly_report",
            {"day": "2026-11-29"},
            "TimeoutError: warehouse query exceeded 30 s",
        ),
    ]
    # As the runner keeps it: the error line in last_error, the traceback in the attempt's history
    # (shown folded on the job page), which is what the docs' screenshots show.
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/app/reports.py", line 88, in build\n'
        "    rows = fetch(day)\n"
        '  File "/app/warehouse.py", line 41, in fetch\n'
        '    return cursor.execute(QUERY, {"day": day}).fetchall()\n'
        "TimeoutError: warehouse query exceeded 30 s"
    )
    ids = []
    for n, (job_type, payload, error) in enumerate(failures):
        row = conn.execute(
            "insert into jobs (type, payload, status, attempts, max_attempts, last_error, finished_at, updated_at, created_at)"
            " values (%s, %s::jsonb, 'failed', 4, 4, %s, now() - %s * interval '41 min', now() - %s * interval '41 min',"
            " now() - interval '3 hours') returning id",
            (job_type, json.dumps(payload), error, n, n),
        ).fetchone()
        assert row is not None
        ids.append(int(row[0]))
        for attempt, minutes in enumerate((180, 179, 174, 144), start=1):
            conn.execute(
                "insert into job_attempts (job_id, attempt, started_at, finished_at, outcome, error, traceback) values"
                " (%s, %s, now() - %s * interval '1 min', now() - %s * interval '1 min' + interval '1.4 s', %s, %s, %s)",
                (
                    ids[-1],
                    attempt,
                    minutes,
                    minutes,
                    "failed" if attempt == 4 else "retried",
                    error,
                    trace if job_type == "nightly_report" else None,
                ),
            )
    conn.execute("""
        insert into crontick_ticks (started_at, finished_at, source, summary)
        select now() - g * interval '15 min', now() - g * interval '15 min' + (40 + g % 7 * 30) * interval '1 ms',
               case when g % 4 = 0 then 'github-oidc' else 'vercel-cron' end,
               jsonb_build_object('jobs', jsonb_build_object('claimed', 3 + g % 5, 'succeeded', 2 + g % 5,
                                  'failed', (g % 9 = 0)::int, 'retried', (g % 6 = 0)::int),
                                  'reminders', jsonb_build_object('sent', g % 3), 'more', false)
        from generate_series(0, 95) g where g not between 30 and 37 order by g desc""")
    conn.execute("""
        insert into bookings (customer_name, email, phone, starts_at, time_zone)
        select (array['Ana Jansen', 'Bram de Vries', 'Chen Li', 'Dana Okafor', 'Eli Cohen'])[g],
               'c' || g || '@example.com', '+3161234567' || g, now() + g * interval '4 hours',
               (array['Europe/Amsterdam', 'Europe/London', 'America/New_York', 'UTC', 'Asia/Tokyo'])[g]
        from generate_series(1, 5) g""")
    conn.execute("""
        insert into reminder_sends (booking_id, kind, channel, status, attempts, max_attempts, sent_at, last_error, maybe_delivered)
        select id, '24h', (array['email', 'sms', 'email', 'whatsapp', 'email'])[id::int],
               (array['sent', 'failed', 'sent', 'unknown', 'sent'])[id::int], 1 + (id = 2)::int * 3, 4,
               case when id in (1, 3, 5) then now() - interval '2 hours' end,
               case id when 2 then 'Twilio error 30003: Unreachable destination handset' when 4 then 'timed out after 10.0 s waiting for the provider' end,
               id = 4
        from bookings""")
    # The per-type ring as the day's ticks left it (issue 23): the overview's job types, worst first.
    conn.execute("""
        insert into crontick_type_minutes (type, slot, shard, bucket, minute, done, failed, retried)
        select t.type, (extract(epoch from m)::bigint / 60 % 1500)::smallint, 0, t.bucket, m, t.done, 0, 0
        from (values ('send_email', 12, 3), ('webhook', 16, 1), ('nightly_report', 30, 0), ('send_sms', 10, 2),
                     ('send_email', 13, 1), ('webhook', 17, 1)) t(type, bucket, done),
             generate_series(date_trunc('minute', now()) - interval '23 hours', date_trunc('minute', now()),
                             interval '20 minutes') m""")
    conn.execute("""
        update crontick_type_minutes set failed = 1, retried = 2
        where (type = 'nightly_report' and minute > now() - interval '1 hour')
           or (type = 'send_sms' and minute > now() - interval '3 hours' and bucket = 10)""")
    return ids[3]  # the nightly report: a failed job whose attempts carry their traceback


@pytest.mark.slow
def test_the_main_pages_on_a_working_day(browser: Browser, database_url: str, conn: psycopg.Connection[Any]) -> None:
    """A realistic day renders on every page, on a desktop and a phone (these are the docs' screenshots)."""
    job_id = _seed_a_working_day(conn)
    with running(settings_for(database_url)) as base:
        page = _page(browser, js=True)
        _login(page, base)
        pages = [
            ("/admin", "day-failed"),
            ("/admin/jobs", "day-jobs"),
            (f"/admin/jobs/{job_id}", "day-job"),
            ("/admin/reminders", "day-reminders"),
            ("/admin/ticks", "day-ticks"),
            ("/admin/overview", "day-overview"),
        ]
        for path, name in pages:
            page.goto(base + path)
            assert page.locator(".unavailable").count() == 0, path
            if name == "day-job":  # the failed attempt's traceback, folded, opened as a person would
                assert page.locator("details.trace").count() == 4  # one per failed attempt
                page.locator("details.trace summary").last.click()
                shown = page.get_by_text('File "/app/warehouse.py", line 41')
                assert [t.is_visible() for t in shown.all()] == [False, False, False, True]  # only the opened one
            if name == "day-overview":
                assert "nightly_report" in page.locator("table.types tbody tr").first.inner_text()
            _shot(page, name, full=name != "day-ticks")  # 50 ticks: the first screenful says enough
        assert page.locator(".chart rect.bar-done").count() == 24
        page.goto(base + "/admin/ticks")
        assert page.locator("tr.gap").count() == 1
        page.set_viewport_size(PHONE)
        for path, name in [("/admin", "day-failed-phone"), (f"/admin/jobs/{job_id}", "day-job-phone")]:
            page.goto(base + path)
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], path
            _shot(page, name)
        page.context.close()


@pytest.mark.slow
@pytest.mark.parametrize("js", [True, False], ids=["js", "nojs"])
def test_a_bad_day_run_now_enqueue_now_pause_and_the_sick_type(
    browser: Browser, database_url: str, conn: psycopg.Connection[Any], js: bool
) -> None:
    """Issue 23's journey: the overview names the failing type first (from jobs this test ran), a job
    waiting on a future run_after runs now, a schedule is run by hand, paused and resumed."""
    from crontick.schedules import registry

    name = f"browser-nightly-{'js' if js else 'nojs'}"
    crontick.schedule(name, "30 2 * * *", "admin_browser_flaky", {"nightly": True})
    FLAKY["fail"] = True
    try:
        for _ in range(2):
            crontick.enqueue(conn, "admin_browser_flaky", {}, max_attempts=1)
        later = crontick.enqueue(conn, "send_digest", {}, run_after=datetime.now(UTC) + timedelta(days=3))
        with running(settings_for(database_url)) as base:
            assert _tick(base)["jobs"]["failed"] == 2
            page = _page(browser, js)
            _login(page, base)
            page.goto(base + "/admin/overview")
            first = page.locator("table.types tbody tr").first.inner_text()
            assert "admin_browser_flaky" in first and "100.0 %" in first
            if js:
                _shot(page, "overview-types")
            page.goto(base + "/admin/jobs?status=scheduled")
            row = page.locator("tr", has=page.locator(f"a:text-is('#{later}')"))
            shown = row.inner_text()  # run_after, absolute beside relative
            assert "scheduled" in shown and "in 2 d" in shown
            assert (datetime.now(UTC) + timedelta(days=3)).strftime("%Y-%m-%d") in shown
            page.click(f"a:text-is('#{later}')")
            page.click("button:text-is('Run now')")
            page.click("button:text-is('Run now')")  # the confirmation's button
            assert page.get_by_text(f"Job #{later} is due now.").is_visible()
            page.goto(base + "/admin/jobs?status=due")
            assert page.locator(f"a:text-is('#{later}')").count() == 1
            page.goto(base + "/admin/schedules")
            sched = page.locator("tr", has=page.locator(f"b:text-is('{name}')"))
            sched.locator("button:text-is('Enqueue now')").click()
            page.click("button:text-is('Enqueue now')")
            assert page.get_by_text("outside its slots").is_visible()
            sched = page.locator("tr", has=page.locator(f"b:text-is('{name}')"))
            sched.locator("button:text-is('Pause')").click()
            page.click("button:text-is('Pause')")
            sched = page.locator("tr", has=page.locator(f"b:text-is('{name}')"))
            assert "paused" in sched.inner_text() and sched.locator("button:text-is('Resume')").count() == 1
            if js:
                _shot(page, "schedules-paused")
            sched.locator("button:text-is('Resume')").click()
            page.click("button:text-is('Resume')")
            assert page.get_by_text(f"Schedule {name} is resumed").is_visible()
            page.goto(base + "/admin/audit")
            # Columns: When, Role, Who, Action, ...; the session began with its sign-in row.
            actions = page.locator("table.list tbody tr td:nth-child(4)").all_inner_texts()
            assert actions == ["resume_schedule", "pause_schedule", "enqueue_schedule", "run_now", "sign_in"]
            page.context.close()
        assert conn.execute("select attempts from jobs where id = %(id)s", {"id": later}).fetchone() == (0,)
        manual = conn.execute("select count(*) from jobs where schedule = %(n)s and scheduled_for is null", {"n": name})
        assert manual.fetchone() == (1,)
    finally:
        registry.unregister(name)
        FLAKY["fail"] = True
