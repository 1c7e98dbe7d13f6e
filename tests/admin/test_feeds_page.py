"""The admin's Hooks and Alerts pages over real HTTP: rows, escaping, roles, JSON twins, paging, the gate."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.hooks.inbound import forget
from tests.support.admin_pages import ADMIN_SECRET, VIEWER_SECRET, client, running, settings_for, signed_in

HOOK = "t-admin-bearer"
HOOK_SECRET = "h" * 40
EVIL = "<script>alert(1)</script>"


@pytest.fixture
def hook() -> Iterator[str]:
    crontick.inbound(HOOK, "t_admin.hooked", verify="bearer", secret=HOOK_SECRET)
    yield HOOK
    forget(HOOK)


def add_events(conn: psycopg.Connection[Any], n: int, *, hook: str = "other-hook", prefix: str = "evt") -> None:
    """n recorded events a second apart (oldest first), each with its own job, as the hook endpoint leaves them."""
    conn.execute(
        "with j as (insert into jobs (type, payload) select 't_admin.hooked', '{}'::jsonb from generate_series(1, %(n)s)"
        " returning id)"
        " insert into crontick_inbound_events (hook, event_id, job_id, received_at)"
        " select %(hook)s, %(prefix)s || '-' || row_number() over (order by id), id,"
        "  now() - make_interval(secs => %(n)s - row_number() over (order by id)) from j",
        {"n": n, "hook": hook, "prefix": prefix},
    )


def add_alerts(conn: psycopg.Connection[Any], statuses: list[str], error: str | None = None) -> None:
    for i, status in enumerate(statuses):
        conn.execute(
            "insert into crontick_alerts (event, subject, occurred_at, body, status, attempts, last_error, sent_at)"
            " values ('job_failed', %(subject)s, now() - make_interval(secs => %(i)s), '{\"secret_body\": 1}', %(status)s,"
            " 1, %(error)s, case when %(status)s = 'sent' then now() end)",
            {"subject": f"job:{1000 + i}", "i": i, "status": status, "error": error},
        )


def test_hooks_page_lists_the_declared_hook_and_a_real_signed_event(
    database_url: str, hook: str, conn: psycopg.Connection[Any]
) -> None:
    with running(settings_for(database_url, kick="off")) as base:
        posted = httpx.post(
            base + f"/api/hooks/{hook}",
            json={"n": 1},
            headers={"Authorization": f"Bearer {HOOK_SECRET}", "Idempotency-Key": EVIL},
        )
        assert posted.status_code == 200, posted.text
        job_id = posted.json()["job_id"]
        c = signed_in(base, VIEWER_SECRET)  # a viewer can read both pages
        page = c.get("/admin/hooks")
        assert page.status_code == 200, page.text[:300]
        assert f"<b>{hook}</b>" in page.text and "<code>bearer</code>" in page.text and "t_admin.hooked" in page.text
        assert HOOK_SECRET not in page.text
        assert EVIL not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
        assert f'href="/admin/jobs/{job_id}"' in page.text
        assert 'href="/admin/hooks"' in page.text and 'aria-current="page"' in page.text
        data = c.get("/admin/hooks.json").json()
        # Other test modules may have declared hooks in this process: ours is one of the list.
        assert {"name": hook, "verify": "bearer", "job_type": "t_admin.hooked"} in data["hooks"]
        assert all(set(h) == {"name", "verify", "job_type"} for h in data["hooks"])
        assert [(e["hook"], e["event_id"], e["job_id"]) for e in data["events"]] == [(hook, EVIL, job_id)]
        assert HOOK_SECRET not in c.get("/admin/hooks", headers={"Accept": "application/json"}).text
        api = httpx.get(base + "/api/admin/hooks", headers={"Authorization": f"Bearer {VIEWER_SECRET}"})
        assert api.status_code == 200 and api.json()["events"][0]["event_id"] == EVIL
        assert conn.execute("select count(*) from crontick_inbound_events").fetchone() == (1,)


def test_hooks_events_page_newest_first_and_filter_by_hook(database_url: str, conn: psycopg.Connection[Any]) -> None:
    add_events(conn, 120, hook="alpha")
    add_events(conn, 3, hook="beta", prefix="b")
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        seen: list[str] = []
        url: str | None = "/admin/hooks.json?hook=alpha"
        pages = 0
        while url:
            body = c.get(url).json()
            seen += [e["event_id"] for e in body["events"]]
            assert all(e["hook"] == "alpha" for e in body["events"])
            url = f"/admin/hooks.json?hook=alpha&cursor={body['next_cursor']}" if body["next_cursor"] else None
            pages += 1
        assert pages == 3 and seen == [f"evt-{i}" for i in range(120, 0, -1)]
        everything = c.get("/admin/hooks.json").json()
        assert len(everything["events"]) == 50 and everything["next_cursor"]
        assert [e["event_id"] for e in c.get("/admin/hooks.json?hook=beta").json()["events"]] == ["b-3", "b-2", "b-1"]
        html = c.get("/admin/hooks?hook=alpha")
        assert "Older »" in html.text and "evt-120" in html.text and "b-3" not in html.text
        assert c.get("/admin/hooks.json?cursor=garbage").json()["events"][0]["event_id"] == "b-3"  # starts again
        api = httpx.get(
            base + "/api/admin/hooks?hook=beta&limit=2", headers={"Authorization": f"Bearer {ADMIN_SECRET}"}
        )
        assert [e["event_id"] for e in api.json()["events"]] == ["b-3", "b-2"]
        more = httpx.get(
            base + f"/api/admin/hooks?hook=beta&limit=2&cursor={api.json()['next_cursor']}",
            headers={"Authorization": f"Bearer {ADMIN_SECRET}"},
        )
        assert [e["event_id"] for e in more.json()["events"]] == ["b-1"] and more.json()["next_cursor"] is None
        bad = httpx.get(base + "/api/admin/hooks?cursor=garbage", headers={"Authorization": f"Bearer {ADMIN_SECRET}"})
        assert bad.status_code == 400 and bad.json()["error"] == "bad_request"


def test_alerts_page_rows_status_filter_and_unsent_note(database_url: str, conn: psycopg.Connection[Any]) -> None:
    add_alerts(conn, ["sent", "failed", "pending"], error=EVIL + "x" * 500)
    with running(settings_for(database_url)) as base:
        c = signed_in(base, VIEWER_SECRET)
        page = c.get("/admin/alerts")
        assert page.status_code == 200, page.text[:300]
        assert "alerts are recorded but not sent" in page.text
        assert EVIL not in page.text and "&lt;script&gt;" in page.text
        assert 'href="/admin/jobs/1000"' in page.text and "job_failed" in page.text
        assert "secret_body" not in page.text
        data = c.get("/admin/alerts.json").json()
        assert [a["status"] for a in data["alerts"]] == ["pending", "failed", "sent"]  # newest first
        assert all(len(a["last_error"]) == 200 for a in data["alerts"]) and "body" not in data["alerts"][0]
        assert data["sending"] is False
        failed = c.get("/admin/alerts?status=failed", headers={"Accept": "application/json"}).json()
        assert [a["subject"] for a in failed["alerts"]] == ["job:1001"]
        assert "job:1000" not in c.get("/admin/alerts?status=pending").text
        api = httpx.get(base + "/api/admin/alerts?status=sent", headers={"Authorization": f"Bearer {VIEWER_SECRET}"})
        assert api.status_code == 200 and [a["subject"] for a in api.json()["alerts"]] == ["job:1000"]
        bad = httpx.get(base + "/api/admin/alerts?status=lost", headers={"Authorization": f"Bearer {VIEWER_SECRET}"})
        assert bad.status_code == 400 and bad.json()["error"] == "bad_request"
    with running(settings_for(database_url, alert_webhook_url="https://hooks.example.com/alerts")) as base:
        c = signed_in(base)
        assert "alerts are recorded but not sent" not in c.get("/admin/alerts").text
        assert c.get("/admin/alerts.json").json()["sending"] is True


def test_alerts_keyset_pages(database_url: str, conn: psycopg.Connection[Any]) -> None:
    add_alerts(conn, ["failed"] * 60 + ["sent"] * 60)
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        first = c.get("/admin/alerts.json?status=failed").json()
        second = c.get(f"/admin/alerts.json?status=failed&cursor={first['next_cursor']}").json()
        ids = [a["id"] for a in first["alerts"] + second["alerts"]]
        assert len(ids) == 60 == len(set(ids)) and ids == sorted(ids, reverse=True)
        assert second["next_cursor"] is None
        assert "Older »" in c.get("/admin/alerts").text


def test_both_pages_need_a_session(database_url: str) -> None:
    with running(settings_for(database_url)) as base:
        c = client(base)
        for path in ("/admin/hooks", "/admin/alerts"):
            r = c.get(path + "?status=failed")
            assert r.status_code == 303 and r.headers["location"].startswith("/admin/login?next=")
            assert c.get(path + ".json").status_code == 401
            assert c.get(path, headers={"Accept": "application/json"}).status_code == 401
            assert httpx.get(base + "/api" + path).status_code == 401


def test_a_hook_that_only_signals_shows_no_job_type_link_and_its_event_no_job(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    crontick.inbound("t-admin-signal-only", verify="bearer", secret=HOOK_SECRET, signal="reply:{n}")
    try:
        with running(settings_for(database_url, kick="off")) as base:
            posted = httpx.post(
                base + "/api/hooks/t-admin-signal-only",
                json={"n": 7},
                headers={"Authorization": f"Bearer {HOOK_SECRET}"},
            )
            assert posted.status_code == 200, posted.text
            page = signed_in(base, VIEWER_SECRET).get("/admin/hooks")
            assert page.status_code == 200, page.text[:300]
            row = page.text[page.text.index("<b>t-admin-signal-only</b>") :].split("</tr>")[0]
            assert "none: it only signals" in row and "<code></code>" not in row  # no link to an empty type
            assert 'href="/admin/jobs/0"' not in page.text and "#0<" not in page.text  # its event woke no job
    finally:
        forget("t-admin-signal-only")
