"""Helpers for the admin page tests (and the security tests of its login): settings with admin secrets, seeded rows, a signed-in client."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from typing import Any

import httpx
import psycopg

from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.servers import serve

ADMIN_SECRET = "admin-secret-" + "a" * 32
VIEWER_SECRET = "viewer-secret-" + "v" * 32
OTHER_SECRET = "other-secret-" + "o" * 32
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; frame-ancestors 'none'",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def settings_for(database_url: str, **changes: Any) -> Settings:
    """Kicks off unless asked for: these tests read what an action wrote, which a tick started by Retry or Run now
    (crontick.admin.answer.kicking) would change under them; tests/admin/test_answer_kicks.py turns them on."""
    base = Settings(
        database_url=database_url,
        cron_secret=TEST_SECRET,
        admin_secret=ADMIN_SECRET,
        admin_viewer_secret=VIEWER_SECRET,
        kick="off",
    )
    return dataclasses.replace(base, **changes)


@contextmanager
def running(settings: Settings) -> Iterator[str]:
    """The real app for `settings` over HTTP on loopback; yields its base URL."""
    from crontick.app import create_app

    with serve(create_app(settings)) as base:
        yield base


def cookie_of(base: str) -> str:
    """The session cookie's name for an admin served over plain http on loopback: one per port."""
    return f"crontick_admin_{base.rsplit(':', 1)[1]}"


def client(base: str) -> httpx.Client:
    """An HTTP client that sends what a same-origin browser form sends (tests drop it to act as another site)."""
    return httpx.Client(
        base_url=base, follow_redirects=False, timeout=30, headers={"Origin": base, "Sec-Fetch-Site": "same-origin"}
    )


def signed_in(base: str, secret: str = ADMIN_SECRET) -> httpx.Client:
    c = client(base)
    r = c.post("/admin/login", data={"secret": secret})
    assert r.status_code == 303, r.text
    return c


def csrf_of(html: str) -> str:
    match = _CSRF.search(html)
    assert match, "expected a CSRF token in the page"
    return match.group(1)


def add_jobs(
    conn: psycopg.Connection[Any],
    n: int,
    *,
    type: str = "admin_test",
    status: str = "failed",
    payload: str = "{}",
    error: str | None = "boom",
) -> list[int]:
    """Insert n jobs directly (a failed job as the tick leaves it: attempts used up, an error)."""
    rows = conn.execute(
        "insert into jobs (type, payload, status, attempts, max_attempts, last_error, finished_at)"
        " select %(type)s, %(payload)s::jsonb, %(status)s, case when %(status)s = 'failed' then 4 else 0 end, 4,"
        " case when %(status)s = 'failed' then %(error)s end, case when %(status)s in ('done', 'failed') then now() end"
        " from generate_series(1, %(n)s) returning id",
        {"type": type, "payload": payload, "status": status, "error": error, "n": n},
    ).fetchall()
    return [int(r[0]) for r in rows]


def status_of(conn: psycopg.Connection[Any], job_id: int) -> str | None:
    row = conn.execute("select status from jobs where id = %s", (job_id,)).fetchone()
    return None if row is None else str(row[0])


class _Urls(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        for name in ("href", "action", "src"):
            if name in named:
                self.found.append((tag, name, named[name]))
        if tag == "form" and "action" not in named:  # it would post to wherever the page is: never wanted
            self.found.append((tag, "action", None))
        content = named.get("content") or ""
        if tag == "meta" and (named.get("http-equiv") or "").lower() == "refresh" and "url=" in content:
            self.found.append((tag, "content", content.split("url=", 1)[1]))


def urls_in(html: str) -> list[tuple[str, str, str | None]]:
    """Every URL a page makes the browser ask for, as (tag, attribute, value): href, action, src, a meta refresh."""
    parser = _Urls()
    parser.feed(html)
    parser.close()
    return parser.found
