"""The admin API's second round over real HTTP against real PostgreSQL: run now (one and in bulk), due and
scheduled lists, the error search, per-type figures from jobs a tick ran, the audit log, the job page's
ticks, and the schedules' enqueue now, pause and resume (each audited, refused to the viewer)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.schedules import registry
from tests.admin.api_support import ADMIN, VIEWER, api_settings, insert_jobs
from tests.support.core_jobs import db_now, job_row, tick
from tests.support.declared import declared
from tests.support.http_checks import LiveApp, assert_json_error

JOBS = "/api/admin/jobs"
SCHEDULE = "t-ops-hourly"


def _audit(conn: psycopg.Connection[Any]) -> list[tuple[str, str, int]]:
    return [(r[0], r[1], r[2]) for r in conn.execute("select role, action, rows from admin_audit order by id")]


@pytest.fixture
def hourly() -> Iterator[str]:
    with declared(SCHEDULE, "0 * * * *", "t_core.ok", {"from": "schedule"}) as name:
        yield name


def test_run_now_makes_a_pending_job_due_and_keeps_its_attempts(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    [later] = insert_jobs(conn, 1, status="pending", type="t_ops.later")
    conn.execute("update jobs set run_after = now() + interval '3 days', attempts = 2 where id = %(id)s", {"id": later})
    [failed] = insert_jobs(conn, 1)
    with live_app(api_settings(database_url)) as base:
        scheduled = httpx.get(f"{base}{JOBS}?status=scheduled", headers=VIEWER).json()["jobs"]
        assert [j["id"] for j in scheduled] == [later]
        assert httpx.get(f"{base}{JOBS}?status=due", headers=VIEWER).json()["jobs"] == []
        assert_json_error(httpx.post(f"{base}{JOBS}/{later}/run-now", headers=VIEWER), 403, "read_only")
        r = httpx.post(f"{base}{JOBS}/{later}/run-now", headers=ADMIN)
        assert r.status_code == 200, r.text
        assert r.json()["id"] == later and r.json()["attempts"] == 2 and r.json()["status"] == "pending"
        assert [j["id"] for j in httpx.get(f"{base}{JOBS}?status=due", headers=ADMIN).json()["jobs"]] == [later]
        assert_json_error(httpx.post(f"{base}{JOBS}/{failed}/run-now", headers=ADMIN), 409, "conflict")
        assert_json_error(httpx.post(f"{base}{JOBS}/999999/run-now", headers=ADMIN), 404, "not_found")
    row = job_row(conn, later)
    assert row["attempts"] == 2 and row["run_after"] <= db_now(conn)
    assert _audit(conn) == [("admin", "run_now", 1)]


def test_bulk_run_now_moves_a_frozen_filter_in_chunks_and_leaves_others(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    mine = insert_jobs(conn, 3, status="pending", type="t_ops.bulk")
    other = insert_jobs(conn, 1, status="pending", type="t_ops.other")
    conn.execute("update jobs set run_after = now() + interval '1 day' where status = 'pending'")
    with live_app(api_settings(database_url)) as base:
        assert_json_error(httpx.post(f"{base}{JOBS}/run-now", headers=VIEWER, json={}), 403, "read_only")
        r = httpx.post(f"{base}{JOBS}/run-now", headers=ADMIN, json={"type": "t_ops.bulk"})
        assert r.status_code == 200, r.text
        assert r.json()["moved"] == 3 and r.json()["next_after_id"] is None
    due = {r[0] for r in conn.execute("select id from jobs where run_after <= now()")}
    assert due == set(mine) and not due & set(other)
    assert _audit(conn) == [("admin", "bulk_run_now", 3)]


def test_error_search_finds_failed_jobs_by_their_error_text(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    insert_jobs(conn, 5)
    [timeout] = insert_jobs(conn, 1, type="t_ops.http")
    conn.execute(
        "update jobs set last_error = 'httpx.ReadTimeout: timed out (429?)' where id = %(id)s", {"id": timeout}
    )
    with live_app(api_settings(database_url)) as base:
        found = httpx.get(f"{base}{JOBS}", params={"error": "READTIMEOUT"}, headers=VIEWER).json()
        assert [j["id"] for j in found["jobs"]] == [timeout] and found["next_cursor"] is None
        assert len(httpx.get(f"{base}{JOBS}", params={"error": "n=", "limit": 2}, headers=ADMIN).json()["jobs"]) == 2
        r = httpx.get(f"{base}{JOBS}", params={"error": "x", "status": "pending"}, headers=ADMIN)
        assert_json_error(r, 400, "bad_request")


def test_types_figures_count_what_ticks_ran_and_put_the_failing_type_first(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute("insert into jobs (type, payload) select 't_core.ok', '{}' from generate_series(1, 4)")
    conn.execute(
        "insert into jobs (type, payload, max_attempts) values ('t_core.fail', '{}', 1), ('t_core.fail', '{}', 2)"
    )
    tick(database_url, now=db_now(conn))
    conn.execute(
        "insert into crontick_pauses (kind, name, paused_by) values ('type', 't_ops.stuck', 'admin');"
        "insert into jobs (type, payload, run_after) values ('t_ops.stuck', '{}', now() - interval '10 minutes')"
    )
    with live_app(api_settings(database_url)) as base:
        r = httpx.get(f"{base}/api/admin/types", headers=VIEWER)
    assert r.status_code == 200, r.text
    types = {t["type"]: t for t in r.json()["types"]}
    assert [t["type"] for t in r.json()["types"]][0] == "t_core.fail"
    ok, fail, stuck = types["t_core.ok"], types["t_core.fail"], types["t_ops.stuck"]
    assert (ok["done_1h"], ok["failed_1h"], ok["done_24h"], ok["failed_24h"]) == (4, 0, 4, 0)
    assert (fail["done_1h"], fail["failed_1h"]) == (0, 1)  # the other one will be retried
    assert ok["p50_ms"] is not None and ok["p95_ms"] >= ok["p50_ms"]
    assert ok["oldest_due_seconds"] is None and not ok["paused"]
    assert stuck["paused"] and stuck["oldest_due_seconds"] >= 590 and stuck["done_24h"] == 0


def test_job_detail_names_each_attempts_tick_and_the_audit_pages_backwards(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = conn.execute(
        "insert into jobs (type, payload, max_attempts) values ('t_core.fail', '{}', 3) returning id"
    ).fetchone()[0]  # type: ignore[index]
    tick(database_url, now=db_now(conn))
    ticks = [r[0] for r in conn.execute("select id from crontick_ticks order by id")]
    pending = insert_jobs(conn, 3, status="pending", type="t_ops.audit")
    with live_app(api_settings(database_url)) as base:
        detail = httpx.get(f"{base}{JOBS}/{job_id}", headers=VIEWER).json()
        assert [h["tick"]["id"] for h in detail["history"]] == [ticks[-1]]
        assert detail["history"][0]["tick"]["source"] == "test"
        assert detail["schedule"] is None and detail["snoozes"] == 0
        for job in pending:
            assert httpx.post(f"{base}{JOBS}/{job}/run-now", headers=ADMIN).status_code == 200
        first = httpx.get(f"{base}/api/admin/audit?limit=2", headers=VIEWER).json()
        second = httpx.get(f"{base}/api/admin/audit", params={"cursor": first["next_cursor"]}, headers=VIEWER).json()
    assert [e["target"] for e in first["entries"] + second["entries"]] == [f"job {j}" for j in reversed(pending)]
    assert {(e["role"], e["action"], e["count"]) for e in first["entries"]} == {("admin", "run_now", 1)}
    assert second["next_cursor"] is None


def test_schedule_pause_records_paused_slots_and_resume_follows_the_policy(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], hourly: str
) -> None:
    tick(database_url, now=db_now(conn))  # the first tick stores the schedule from now on
    path = f"/api/admin/schedules/{hourly}"
    with live_app(api_settings(database_url)) as base:
        assert_json_error(httpx.post(f"{base}{path}/pause", headers=VIEWER), 403, "read_only")
        assert_json_error(httpx.post(f"{base}/api/admin/schedules/nope/pause", headers=ADMIN), 404, "not_found")
        assert httpx.post(f"{base}{path}/pause", headers=ADMIN).json()["paused"] is True
        # Three hourly slots come due while paused; a tick sees them.
        conn.execute(
            "update crontick_schedules set evaluated_until = date_trunc('hour', now()) - interval '3 hours' + interval '1 minute',"
            " next_at = date_trunc('hour', now()) - interval '2 hours' where name = %(n)s",
            {"n": hourly},
        )
        tick(database_url, now=db_now(conn))
        assert conn.execute("select count(*) from jobs where schedule = %(n)s", {"n": hourly}).fetchone() == (0,)
        [(outcome, count)] = conn.execute(
            "select outcome, slot_count from crontick_schedule_slots where schedule = %(n)s", {"n": hourly}
        ).fetchall()
        assert (outcome, count) == ("paused", 3)
        # Two more come due while paused, seen by no tick: the resume records them as paused too.
        conn.execute(
            "update crontick_schedules set evaluated_until = evaluated_until - interval '2 hours',"
            " next_at = now() - interval '1 hour' where name = %(n)s",
            {"n": hourly},
        )
        conn.execute("delete from crontick_schedule_slots")
        r = httpx.post(f"{base}{path}/resume", headers=ADMIN)
        assert r.status_code == 200, r.text
        assert r.json() == {"schedule": hourly, "paused": False, "skipped_slots": 2}
        tick(database_url, now=db_now(conn))
    assert conn.execute("select count(*) from jobs where schedule = %(n)s", {"n": hourly}).fetchone() == (0,)
    assert conn.execute("select count(*) from crontick_pauses").fetchone() == (0,)
    assert [a[1] for a in _audit(conn)] == ["pause_schedule", "resume_schedule"]


def test_enqueue_now_runs_one_job_outside_the_slots_and_takes_none(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], hourly: str
) -> None:
    tick(database_url, now=db_now(conn))
    path = f"/api/admin/schedules/{hourly}/enqueue"
    with live_app(api_settings(database_url)) as base:
        assert_json_error(httpx.post(base + path, headers=VIEWER), 403, "read_only")
        r = httpx.post(base + path, headers=ADMIN)
        assert r.status_code == 200, r.text
        job_id = r.json()["job_id"]
        again = httpx.post(base + path, headers=ADMIN).json()["job_id"]
    assert again != job_id
    row = job_row(conn, job_id)
    assert (row["type"], row["payload"], row["schedule"], row["scheduled_for"]) == (
        "t_core.ok",
        {"from": "schedule"},
        hourly,
        None,
    )
    assert conn.execute("select count(*) from crontick_schedule_slots").fetchone() == (0,)
    assert conn.execute(
        "select manual_job_id from crontick_schedules where name = %(n)s", {"n": hourly}
    ).fetchone() == (again,)
    # The schedule's real slot still runs: it comes due and the tick enqueues it as usual.
    conn.execute(
        "update crontick_schedules set evaluated_until = date_trunc('hour', now()) - interval '1 minute',"
        " next_at = date_trunc('hour', now()) where name = %(n)s",
        {"n": hourly},
    )
    tick(database_url, now=db_now(conn))
    [(outcome, slot_job)] = conn.execute("select outcome, job_id from crontick_schedule_slots").fetchall()
    assert outcome == "enqueued" and slot_job not in (job_id, again)
    assert [a[1:] for a in _audit(conn)] == [("enqueue_schedule", 1), ("enqueue_schedule", 1)]


def test_a_plan_made_before_the_pause_committed_applies_nothing(
    database_url: str, conn: psycopg.Connection[Any], hourly: str
) -> None:
    """A tick that read the schedule unpaused and applies after the pause committed enqueues nothing; the
    next tick decides those slots as paused."""
    from psycopg.types.json import Jsonb

    from crontick.db import query

    tick(database_url, now=db_now(conn))
    conn.execute(
        "update crontick_schedules set evaluated_until = now() - interval '2 hours', next_at = now() - interval '1 hour'"
        " where name = %(n)s",
        {"n": hourly},
    )
    now, _, _, due, _ = conn.execute(query("schedule_due"), {"declared": None, "digest": "x"}).fetchone()  # type: ignore[misc]
    [plan] = [registry._plan(entry, now, 900.0) for entry in due]
    assert plan is not None and plan[8] and plan[10] is False  # a slot to enqueue, read unpaused
    conn.execute("insert into crontick_pauses (kind, name) values ('schedule', %(n)s)", {"n": hourly})
    enqueued, skipped, advanced, _ = conn.execute(query("schedule_apply"), {"plans": Jsonb([plan])}).fetchone()  # type: ignore[misc]
    assert (enqueued, skipped, advanced) == (0, 0, 0)
    tick(database_url, now=db_now(conn))
    assert conn.execute("select outcome, slot_count from crontick_schedule_slots").fetchall() == [("paused", 2)]
    assert conn.execute("select count(*) from jobs where schedule = %(n)s", {"n": hourly}).fetchone() == (0,)


@crontick.handler("t_ops.twice", max_attempts=2)
def twice(payload: Any, job: crontick.Job) -> None:
    pass


def test_enqueue_now_gives_the_job_its_handlers_max_attempts(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    crontick.schedule("t-ops-twice", "0 * * * *", "t_ops.twice", {})
    try:
        with live_app(api_settings(database_url)) as base:
            r = httpx.post(base + "/api/admin/schedules/t-ops-twice/enqueue", headers=ADMIN)
        assert r.status_code == 200, r.text
    finally:
        registry.unregister("t-ops-twice")
    assert job_row(conn, r.json()["job_id"])["max_attempts"] == 2
