"""The JSON admin API over real HTTP against real PostgreSQL: auth, job detail with history, actions, paging."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from tests.admin.api_support import ADMIN, API_ADMIN_SECRET, VIEWER, api_settings, insert_jobs
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import db_now, job_row, tick
from tests.support.http_checks import LiveApp, assert_json_error

JOBS = "/api/admin/jobs"


def test_closed_without_admin_secret_and_cron_secret_never_opens_it(live_app: LiveApp, database_url: str) -> None:
    with live_app(api_settings(database_url, admin_secret=None, admin_viewer_secret=None)) as base:
        assert_json_error(httpx.get(base + JOBS, headers=ADMIN), 503, "admin_not_configured")
    with live_app(api_settings(database_url)) as base:
        missing = assert_json_error(httpx.get(base + JOBS), 401, "unauthorized")
        assert "CRONTICK_ADMIN_SECRET" in missing["detail"]
        r = httpx.get(base + JOBS, headers={"Authorization": f"Bearer {TEST_SECRET}"})
        assert_json_error(r, 401, "unauthorized")
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert_json_error(httpx.get(base + JOBS, headers={"Authorization": API_ADMIN_SECRET}), 401, "unauthorized")
        assert httpx.get(base + JOBS, headers=ADMIN).status_code == 200
        assert httpx.get(base + JOBS, headers=VIEWER).status_code == 200


def test_settings_built_in_code_with_cron_secret_as_an_admin_secret_open_nothing(
    live_app: LiveApp, database_url: str
) -> None:
    """from_env refuses CRON_SECRET as an admin secret at startup; Settings built in code are held to the same
    rule (Settings.admin_roles): the scheduler's bearer, which Vercel sends with every call, never opens the API."""
    cron = {"Authorization": f"Bearer {TEST_SECRET}"}
    with live_app(
        api_settings(database_url, admin_secret=TEST_SECRET)
    ) as base:  # the admin's own secret is CRON_SECRET
        assert_json_error(httpx.get(base + JOBS, headers=cron), 503, "admin_not_configured")
        assert_json_error(httpx.post(f"{base}{JOBS}/1/retry", headers=cron), 503, "admin_not_configured")
        assert_json_error(httpx.get(base + JOBS, headers=VIEWER), 503, "admin_not_configured")
    with live_app(api_settings(database_url, admin_viewer_secret=TEST_SECRET)) as base:  # the viewer's is
        assert_json_error(httpx.get(base + JOBS, headers=cron), 401, "unauthorized")
        assert httpx.get(base + JOBS, headers=ADMIN).status_code == 200


def test_viewer_reads_but_every_post_is_403(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    [failed] = insert_jobs(conn, 1)
    with live_app(api_settings(database_url)) as base:
        assert httpx.get(f"{base}{JOBS}/{failed}", headers=VIEWER).json()["id"] == failed
        for path in (
            f"{JOBS}/{failed}/retry",
            f"{JOBS}/{failed}/cancel",
            f"{JOBS}/{failed}/delete",
            f"{JOBS}/retry",
            "/api/admin/reminders/1/24h/retry",
        ):
            assert_json_error(httpx.post(base + path, headers=VIEWER), 403, "read_only")
    assert job_row(conn, failed)["status"] == "failed"


def test_failed_job_history_retry_keeps_it_and_the_next_tick_adds_to_it(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = conn.execute(
        "insert into jobs (type, payload, max_attempts) values ('t_core.fail', '{}', 2) returning id"
    ).fetchone()[0]  # type: ignore[index]
    tick(database_url, now=db_now(conn))
    conn.execute("update jobs set run_after = now() - interval '1 second' where id = %(id)s", {"id": job_id})
    tick(database_url, now=db_now(conn))
    assert job_row(conn, job_id)["status"] == "failed"
    with live_app(api_settings(database_url)) as base:
        detail = httpx.get(f"{base}{JOBS}/{job_id}", headers=ADMIN).json()
        assert [(h["attempt"], h["outcome"]) for h in detail["history"]] == [(1, "retried"), (2, "failed")]
        assert detail["history"][1]["error"] == "ValueError: boom on attempt 2" == detail["last_error"]
        assert all(h["started_at"] <= h["finished_at"] for h in detail["history"])

        retried = httpx.post(f"{base}{JOBS}/{job_id}/retry", headers=ADMIN)
        assert retried.status_code == 200, retried.text
        body = retried.json()
        assert (body["status"], body["attempts"], body["max_attempts"]) == ("pending", 2, 3)
        assert_json_error(httpx.post(f"{base}{JOBS}/{job_id}/retry", headers=ADMIN), 409, "conflict")

        tick(database_url, now=db_now(conn))
        after = httpx.get(f"{base}{JOBS}/{job_id}", headers=ADMIN).json()
        assert [(h["attempt"], h["outcome"]) for h in after["history"]] == [
            (1, "retried"),
            (2, "failed"),
            (3, "failed"),
        ]
        assert after["status"] == "failed"
    assert conn.execute("select role, action, rows from admin_audit").fetchall() == [("admin", "retry_job", 1)]


def test_unknown_ids_are_404_json(live_app: LiveApp, database_url: str) -> None:
    with live_app(api_settings(database_url)) as base:
        for path in (f"{JOBS}/424242", f"{JOBS}/abc", f"{JOBS}/99999999999999999999999"):
            assert_json_error(httpx.get(base + path, headers=ADMIN), 404, "not_found")
        for verb in ("retry", "cancel", "delete"):
            assert_json_error(httpx.post(f"{base}{JOBS}/424242/{verb}", headers=ADMIN), 404, "not_found")
        assert_json_error(httpx.post(f"{base}/api/admin/reminders/1/24h/retry", headers=ADMIN), 404, "not_found")


def test_retry_whose_key_is_held_is_409_and_bulk_skips_it(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    [old] = insert_jobs(conn, 1, key="welcome:42")
    [holder] = insert_jobs(conn, 1, status="pending", key="welcome:42")
    free = insert_jobs(conn, 3)
    with live_app(api_settings(database_url)) as base:
        body = assert_json_error(httpx.post(f"{base}{JOBS}/{old}/retry", headers=ADMIN), 409, "key_taken")
        assert f"job {holder}" in body["detail"]
        bulk = httpx.post(f"{base}{JOBS}/retry", headers=ADMIN, json={"status": "failed"})
        assert bulk.status_code == 200, bulk.text
        assert bulk.json() == {"retried": 3, "skipped_key_taken": 1, "max_id": free[-1], "next_after_id": None}
    assert job_row(conn, old)["status"] == "failed"
    assert {job_row(conn, i)["status"] for i in free} == {"pending"}


def test_retry_of_a_cancelled_debounced_job_whose_window_reopened_is_409_and_bulk_skips_it(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """Cancelled before they started, two jobs of one debounce key: retried, each would reopen the key's window."""
    debounce = crontick.Debounce(key="reply:42", seconds=3)
    with live_app(api_settings(database_url)) as base:
        first = crontick.enqueue(conn, "t_api.reply", {"text": "hi"}, debounce=debounce)
        assert httpx.post(f"{base}{JOBS}/{first}/cancel", headers=ADMIN).status_code == 200
        second = crontick.enqueue(conn, "t_api.reply", {"text": "again"}, debounce=debounce)
        assert second != first
        assert httpx.post(f"{base}{JOBS}/{second}/cancel", headers=ADMIN).status_code == 200
        bulk = httpx.post(f"{base}{JOBS}/retry", headers=ADMIN, json={"status": "cancelled"})
        assert bulk.status_code == 200, bulk.text  # was a 500: UniqueViolation on jobs_debounce_open
        assert bulk.json() == {"retried": 1, "skipped_key_taken": 1, "max_id": second, "next_after_id": None}
        body = assert_json_error(httpx.post(f"{base}{JOBS}/{second}/retry", headers=ADMIN), 409, "key_taken")
        assert f"debounce key to be free, got it held by active job {first}" in body["detail"]
    assert (job_row(conn, first)["status"], job_row(conn, second)["status"]) == ("pending", "cancelled")


def test_bulk_retry_walks_a_frozen_filter_in_chunks(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    mine = insert_jobs(conn, 1200, type="t_api.bulk")
    others = insert_jobs(conn, 50, type="t_api.other")
    with live_app(api_settings(database_url)) as base:
        first = httpx.post(f"{base}{JOBS}/retry", headers=ADMIN, json={"type": "t_api.bulk"}).json()
        insert_jobs(conn, 10, type="t_api.bulk")  # after confirmation: outside the frozen filter
        calls, after, total = 1, first["next_after_id"], first["retried"]
        while after is not None:
            step = httpx.post(
                f"{base}{JOBS}/retry",
                headers=ADMIN,
                json={"type": "t_api.bulk", "max_id": first["max_id"], "after_id": after},
            ).json()
            calls, after, total = calls + 1, step["next_after_id"], total + step["retried"]
    assert (total, calls) == (1200, 3)
    counts = dict(conn.execute("select type, count(*) from jobs where status = 'pending' group by type").fetchall())
    assert counts == {"t_api.bulk": 1200}
    assert len(mine) + len(others) == 1250


def test_cancel_only_pending(live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]) -> None:
    [pending] = insert_jobs(conn, 1, status="pending")
    [done] = insert_jobs(conn, 1, status="done")
    with live_app(api_settings(database_url)) as base:
        r = httpx.post(f"{base}{JOBS}/{pending}/cancel", headers=ADMIN)
        assert (r.status_code, r.json()["status"]) == (200, "cancelled")
        assert_json_error(httpx.post(f"{base}{JOBS}/{pending}/cancel", headers=ADMIN), 409, "conflict")
        assert_json_error(httpx.post(f"{base}{JOBS}/{done}/cancel", headers=ADMIN), 409, "conflict")
        tick(database_url, now=db_now(conn))
        assert job_row(conn, pending)["status"] == "cancelled"  # never claimed
        assert httpx.post(f"{base}{JOBS}/{pending}/delete", headers=ADMIN).json() == {"id": pending, "deleted": True}
        assert_json_error(httpx.get(f"{base}{JOBS}/{pending}", headers=ADMIN), 404, "not_found")


def test_keyset_pages_while_rows_are_inserted_have_no_duplicates_or_gaps(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    original = insert_jobs(conn, 130, type="t_api.page")
    seen: list[int] = []
    with live_app(api_settings(database_url)) as base:
        cursor = None
        while True:
            params: dict[str, Any] = {"type": "t_api.page", "limit": 20, **({"cursor": cursor} if cursor else {})}
            page = httpx.get(base + JOBS, headers=ADMIN, params=params).json()
            seen += [j["id"] for j in page["jobs"]]
            assert all("payload" not in j for j in page["jobs"])
            insert_jobs(conn, 7, type="t_api.page")  # new rows land above the cursor, never in the pages ahead
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert seen == sorted(original, reverse=True)


def test_filters_payload_search_and_bad_parameters(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ids = insert_jobs(conn, 30, type="t_api.search")
    conn.execute("update jobs set last_error = repeat('e', 5000) where id = %(id)s", {"id": ids[0]})
    with live_app(api_settings(database_url)) as base:

        def get(**params: Any) -> httpx.Response:
            return httpx.get(base + JOBS, headers=ADMIN, params=params)

        assert [j["id"] for j in get(payload='{"n": 7}').json()["jobs"]] == [ids[6]]
        assert [j["id"] for j in get(payload='{"n": 7}', status="done").json()["jobs"]] == []
        assert len(get(status="failed", type="t_api.search", limit=500).json()["jobs"]) == 30
        assert len(get(status="failed").json()["jobs"][-1]["last_error"]) == 200
        assert len(httpx.get(f"{base}{JOBS}/{ids[0]}", headers=ADMIN).json()["last_error"]) == 5000
        for bad in (
            {"status": "sleeping"},
            {"limit": "0"},
            {"limit": "501"},
            {"limit": "x"},
            {"cursor": "nope"},
            {"payload": "[1]"},
            {"payload": "{"},
            {"type": "a\x00b"},
            {"payload": '{"a": "\\u0000"}'},
        ):
            assert_json_error(get(**bad), 400, "bad_request")


def test_a_read_past_its_timeout_is_503_unavailable(live_app: LiveApp, database_url: str) -> None:
    with live_app(api_settings(database_url)) as base, psycopg.connect(database_url) as locker:
        locker.execute("lock table jobs in access exclusive mode")
        assert_json_error(httpx.get(base + JOBS, headers=ADMIN, timeout=30), 503, "unavailable")
        locker.rollback()
        assert httpx.get(base + JOBS, headers=ADMIN).status_code == 200


@pytest.mark.parametrize("status", ["pending", "running"])
def test_retry_of_active_job_is_409(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], status: str
) -> None:
    [job_id] = insert_jobs(conn, 1, status="pending")
    if status == "running":
        conn.execute(
            "update jobs set status = 'running', locked_until = now() + %(t)s where id = %(id)s",
            {"t": timedelta(minutes=1), "id": job_id},
        )
    with live_app(api_settings(database_url)) as base:
        body = assert_json_error(httpx.post(f"{base}{JOBS}/{job_id}/retry", headers=ADMIN), 409, "conflict")
        assert f"job {job_id}" in body["detail"] and status in body["detail"]
