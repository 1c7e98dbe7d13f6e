"""Admin actions over real HTTP: confirm then 303, cancel and delete, chunked bulk retry, reminders, paging."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg

from tests.support.admin_pages import add_jobs, csrf_of, running, settings_for, signed_in, status_of


def test_retry_asks_then_303s_back_with_a_flash(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [job_id] = add_jobs(conn, 1)
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        page = c.get(f"/admin/jobs/{job_id}")
        assert '<button type="submit" class="btn primary">Retry</button>' in page.text
        back = f"/admin/jobs/{job_id}"
        ask = c.post(f"/admin/jobs/{job_id}/retry", data={"csrf": csrf_of(page.text), "back": back})
        assert ask.status_code == 200 and "Retry job" in ask.text and 'name="confirm" value="yes"' in ask.text
        assert status_of(conn, job_id) == "failed"
        done = c.post(f"/admin/jobs/{job_id}/retry", data={"csrf": csrf_of(ask.text), "back": back, "confirm": "yes"})
        assert done.status_code == 303 and done.headers["location"] == back
        assert status_of(conn, job_id) == "pending"
        after = c.get(back)
        assert f"Job #{job_id} is pending again." in after.text
        assert "is pending again" not in c.get(back).text  # the flash shows once
        again = c.post(
            f"/admin/jobs/{job_id}/retry", data={"csrf": csrf_of(after.text), "back": back, "confirm": "yes"}
        )
        assert again.status_code == 303
        assert "was not changed" in c.get(back).text  # a pending job: a clear message, never a 500
        audit = conn.execute("select role, action, rows from admin_audit order by id").fetchall()
        assert audit == [("admin", "sign_in", 1), ("admin", "retry_job", 1)]


def test_cancel_and_delete(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [pending] = add_jobs(conn, 1, status="pending", error=None)
    [done] = add_jobs(conn, 1, status="done", error=None)
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        token = csrf_of(c.get("/admin").text)
        assert c.post(f"/admin/jobs/{pending}/cancel", data={"csrf": token, "confirm": "yes"}).status_code == 303
        assert status_of(conn, pending) == "cancelled"
        r = c.post(f"/admin/jobs/{done}/delete", data={"csrf": token, "confirm": "yes", "back": f"/admin/jobs/{done}"})
        assert r.status_code == 303 and r.headers["location"] == "/admin/jobs"
        assert status_of(conn, done) is None


def _follow(c: Any, r: Any, limit: int = 100) -> tuple[Any, int]:
    """Follow 303s and self-refreshing progress pages as a browser would; count the requests."""
    hops = 0
    while hops < limit:
        if r.status_code == 303:
            r = c.get(r.headers["location"])
        elif 'http-equiv="refresh"' in r.text and "bulk-retry/continue" in r.text:
            target = r.text.split('content="0;url=', 1)[1].split('"', 1)[0].replace("&amp;", "&")
            r = c.get(target)
        else:
            return r, hops
        hops += 1
    raise AssertionError("the bulk retry never finished")


def test_bulk_retry_of_a_frozen_filter_in_chunks(database_url: str, conn: psycopg.Connection[Any]) -> None:
    targets = add_jobs(conn, 1200, type="report")
    others = add_jobs(conn, 30, type="email") + add_jobs(conn, 5, type="report", status="done", error=None)
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        listing = c.get("/admin/jobs?status=failed&type=report")
        ask = c.post(
            "/admin/jobs/bulk-retry",
            data={"csrf": csrf_of(listing.text), "type": "report", "back": "/admin/jobs?status=failed&type=report"},
        )
        assert ask.status_code == 200 and "Retry 500+ failed jobs?" in ask.text and f"#{targets[-1]}" in ask.text
        late = add_jobs(conn, 3, type="report")  # fail after the confirmation: not included
        r = c.post(
            "/admin/jobs/bulk-retry",
            data={
                "csrf": csrf_of(ask.text),
                "type": "report",
                "confirm": "yes",
                "max_id": str(targets[-1]),
                "back": "/admin/jobs?status=failed&type=report",
            },
        )
        assert r.status_code == 303 and "/admin/jobs/bulk-retry/continue?" in r.headers["location"]
        # The continuation link is bound to this session: another session cannot use it.
        assert signed_in(base).get(r.headers["location"]).status_code == 403
        final, hops = _follow(c, r)
        assert hops == 3  # chunks 2 and 3, then the page it returns to
        assert "Retried 1,200 failed jobs." in final.text
    counts = dict(conn.execute("select type || ':' || status, count(*) from jobs group by 1").fetchall())
    assert counts == {"report:pending": 1200, "report:failed": 3, "report:done": 5, "email:failed": 30}
    assert all(status_of(conn, i) == "failed" for i in late) and len(others) == 35


def test_bulk_retry_of_thousands_refreshes_before_browsers_give_up(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ids = add_jobs(conn, 6000, type="bulk")
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        token = csrf_of(c.get("/admin").text)
        r = c.post(
            "/admin/jobs/bulk-retry", data={"csrf": token, "type": "bulk", "confirm": "yes", "max_id": str(ids[-1])}
        )
        redirects_in_a_row, longest = 0, 0
        while r.status_code in (200, 303) and "Retried" not in r.text:
            if r.status_code == 303:
                redirects_in_a_row += 1
                longest = max(longest, redirects_in_a_row)
                r = c.get(r.headers["location"])
            else:
                assert "Retrying" in r.text
                redirects_in_a_row = 0
                r = c.get(r.text.split('content="0;url=', 1)[1].split('"', 1)[0].replace("&amp;", "&"))
        assert "Retried 6,000 failed jobs." in r.text and longest < 20
    assert conn.execute("select count(*) from jobs where status = 'pending'").fetchone() == (6000,)


def test_paging_while_rows_are_inserted_has_no_duplicates_or_gaps(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    first = add_jobs(conn, 130, type="page")
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        seen: list[int] = []
        url: str | None = "/admin/jobs.json?type=page"
        while url:
            body = c.get(url).json()
            seen += [j["id"] for j in body["jobs"]]
            add_jobs(conn, 7, type="page")  # newer rows land above the cursor
            url = f"/admin/jobs.json?type=page&cursor={body['next_cursor']}" if body["next_cursor"] else None
        assert seen == sorted(first, reverse=True)
        html = c.get("/admin/jobs?type=page")
        nxt = html.text.split('rel="next"', 1)[0].rsplit('href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
        assert parse_qs(urlsplit(nxt).query)["type"] == ["page"] and "cursor" in parse_qs(urlsplit(nxt).query)


def test_filters_jump_and_payload_search(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [mine] = add_jobs(conn, 1, type="a", payload='{"user_id": 42, "x": 1}')
    add_jobs(conn, 3, type="a", payload='{"user_id": 7}')
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        found = c.get('/admin/jobs.json?payload={"user_id":42}').json()
        assert [j["id"] for j in found["jobs"]] == [mine]
        bad = c.get("/admin/jobs?payload={user_id")
        assert bad.status_code == 400 and "must be JSON" in bad.text
        assert c.get(f"/admin/jobs?id={mine}").headers["location"] == f"/admin/jobs/{mine}"
        assert c.get("/admin/jobs?status=bogus").status_code == 400
        assert c.get("/admin/jobs?cursor=not-ours").status_code == 200


def test_retry_an_unknown_reminder(database_url: str, conn: psycopg.Connection[Any]) -> None:
    row = conn.execute(
        "insert into bookings (customer_name, starts_at) values ('Ana', now() + interval '20 hours') returning id"
    ).fetchone()
    assert row is not None
    booking = int(row[0])
    conn.execute(
        "insert into reminder_sends (booking_id, kind, channel, status, attempts, last_error, maybe_delivered)"
        " values (%s, '24h', 'sms', 'unknown', 1, 'timed out', true)",
        (booking,),
    )
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        page = c.get("/admin")
        assert f"/admin/reminders/{booking}/24h/retry" in page.text and "unknown" in page.text
        url = f"/admin/reminders/{booking}/24h/retry"
        ask = c.post(url, data={"csrf": csrf_of(page.text), "back": "/admin/reminders"})
        assert ask.status_code == 200 and "Check the provider" in ask.text
        done = c.post(url, data={"csrf": csrf_of(ask.text), "back": "/admin/reminders", "confirm": "yes"})
        assert done.status_code == 303 and done.headers["location"] == "/admin/reminders"
        assert "will be sent on the next tick" in c.get("/admin/reminders").text
        retried = conn.execute(
            "select status, next_attempt_at is not null, maybe_delivered from reminder_sends"
        ).fetchone()
        assert retried == ("failed", True, False)  # due again now, for the next tick's claim
        conn.execute("update reminder_sends set status = 'sent', sent_at = now(), next_attempt_at = null")
        sent = c.post(url, data={"csrf": csrf_of(ask.text), "back": "/admin/reminders", "confirm": "yes"})
        assert sent.status_code == 303 and "was not changed" in c.get("/admin/reminders").text


def test_a_payload_search_goes_on_past_an_empty_window(database_url: str, conn: psycopg.Connection[Any]) -> None:
    from crontick.admin import jobs

    [old] = add_jobs(conn, 1, type="a", payload='{"user_id": 42}')
    conn.execute("select setval(pg_get_serial_sequence('jobs', 'id'), %s)", (old + jobs.SEARCH_WINDOW_IDS + 10,))
    add_jobs(conn, 3, type="a", payload='{"user_id": 7}')
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        first = c.get('/admin/jobs?payload={"user_id":42}')
        assert "No match in this stretch of ids" in first.text and 'rel="next"' in first.text
        older = first.text.split('rel="next"', 1)[0].rsplit('href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
        assert f"#{old}</a>" in c.get(older).text
