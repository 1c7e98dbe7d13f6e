"""Child jobs over real ticks: job.spawn enqueues once (a retry spawns nothing again), job.join parks the parent until
every child has ended and returns their statuses and results in order; the last child's end wakes the parent with no
poll; cancelling a parent cancels its children; a join on ids that are not this job's children is a clear error."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

import crontick
from tests.support.core_jobs import job_row, tick

runs: Counter[int] = Counter()
joined: dict[int, Any] = {}


@pytest.fixture(autouse=True)
def _fresh() -> None:
    runs.clear()
    joined.clear()


@crontick.handler("t_kids.child")
async def child(payload: Any, job: crontick.Job) -> Any:
    if payload.get("fail"):
        raise crontick.PermanentError("no")
    return {"double": payload["n"] * 2}


@crontick.handler("t_kids.quiet")
def quiet(payload: Any, job: crontick.Job) -> None:
    pass


@crontick.handler("t_kids.parent", retry=crontick.Retry((0,)))
async def parent(payload: Any, job: crontick.Job) -> None:
    runs[job.id] += 1
    ids = await job.spawn("kids", "t_kids.child", [{"n": n, "fail": n == payload.get("fail")} for n in range(3)])
    if payload.get("crash") and job.attempt == 1:
        raise RuntimeError("after the spawn")
    joined[job.id] = await job.join("kids-done", ids, timeout_seconds=3600)


@crontick.handler("t_kids.sync_parent")
def sync_parent(payload: Any, job: crontick.Job) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)  # held back: the test lets them run
    ids = job.spawn("kids", "t_kids.quiet", [{}, {}], run_after=later)
    joined[job.id] = job.join("kids-done", ids, timeout_seconds=3600)


@crontick.handler("t_kids.stranger")
async def stranger(payload: Any, job: crontick.Job) -> None:
    await job.join("other", payload["ids"], timeout_seconds=60)


def test_spawn_then_join_returns_each_childs_status_and_result_in_order(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    parent_id = crontick.enqueue(conn, "t_kids.parent", {"fail": 1})
    tick(database_url)  # the parent spawns, the children run in the same tick or the next, the parent waits
    for _ in range(4):
        if parent_id in joined:
            break
        tick(database_url)
    kids = conn.execute("select id from jobs where parent_id = %(p)s order by id", {"p": parent_id}).fetchall()
    ids = [k[0] for k in kids]
    assert len(ids) == 3
    assert joined[parent_id] == [
        {"id": ids[0], "status": "done", "result": {"double": 0}},
        {"id": ids[1], "status": "failed", "result": None},
        {"id": ids[2], "status": "done", "result": {"double": 4}},
    ]
    assert job_row(conn, parent_id)["status"] == "done"


def test_the_last_child_to_end_wakes_the_waiting_parent_without_a_poll(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    parent_id = crontick.enqueue(conn, "t_kids.sync_parent", {})
    tick(database_url)  # it spawns two children (due in an hour) and parks, its join's deadline an hour away
    ids = [r[0] for r in conn.execute("select id from jobs where parent_id = %(p)s order by id", {"p": parent_id})]
    assert len(ids) == 2
    assert job_row(conn, parent_id)["status"] == "waiting"
    conn.execute("update jobs set run_after = now() where id = %(id)s", {"id": ids[0]})
    tick(database_url)  # one child ends: the parent still waits
    assert job_row(conn, parent_id)["status"] == "waiting"
    conn.execute("update jobs set run_after = now() where id = %(id)s", {"id": ids[1]})
    tick(database_url)  # the last one ends: the parent is due now, an hour before its deadline
    woken = job_row(conn, parent_id)
    if woken["status"] == "pending":  # else the same tick ran it already (a prompt start)
        assert conn.execute("select %(at)s <= now()", {"at": woken["run_after"]}).fetchone() == (True,)
        tick(database_url)
    assert job_row(conn, parent_id)["status"] == "done"
    assert joined[parent_id] == [{"id": i, "status": "done", "result": None} for i in ids]
    # Recorded: the spawn, the wait and the join, once each.
    steps = conn.execute(
        "select name, kind, status from job_steps where job_id = %(p)s order by created_at, name", {"p": parent_id}
    )
    assert steps.fetchall() == [
        ("kids", "step", "done"),
        ("kids-done#0", "wait", "signalled"),
        ("kids-done", "step", "done"),
    ]


def test_cancelling_a_waiting_parent_cancels_its_unended_children(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    parent_id = crontick.enqueue(conn, "t_kids.sync_parent", {})
    tick(database_url)
    assert job_row(conn, parent_id)["status"] == "waiting"
    with conn.transaction():
        assert crontick.cancel(conn, parent_id) is True
    statuses = conn.execute("select status from jobs where parent_id = %(p)s", {"p": parent_id}).fetchall()
    assert statuses == [("cancelled",), ("cancelled",)]
    assert job_row(conn, parent_id)["status"] == "cancelled"
    assert conn.execute("select count(*) from crontick_alerts").fetchone() == (0,)


def test_a_parent_that_fails_after_spawning_spawns_nothing_again(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    parent_id = crontick.enqueue(conn, "t_kids.parent", {"crash": True})
    for _ in range(6):
        if parent_id in joined:
            break
        conn.execute("update jobs set run_after = now() where status = 'pending'")
        tick(database_url)
    assert runs[parent_id] >= 2  # it failed once after the spawn and ran again
    assert conn.execute("select count(*) from jobs where parent_id = %(p)s", {"p": parent_id}).fetchone() == (3,)
    assert [c["status"] for c in joined[parent_id]] == ["done", "done", "done"]


def test_a_join_on_ids_that_are_not_this_jobs_children_fails_saying_so(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    other = crontick.enqueue(conn, "t_kids.quiet", {})
    job_id = crontick.enqueue(conn, "t_kids.stranger", {"ids": [other]})
    tick(database_url)
    row = job_row(conn, job_id)
    assert row["status"] == "failed"
    assert f"expected ids of this job's children (job.spawn), got {other}, which are not" in row["last_error"]


@crontick.handler("t_kids.returns_odd")
def returns_odd(payload: Any, job: crontick.Job) -> Any:
    return object() if payload["odd"] else {"ok": True}


def test_a_handlers_return_value_is_kept_as_its_result_and_one_that_is_not_json_never_fails_the_job(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    odd = crontick.enqueue(conn, "t_kids.returns_odd", {"odd": True})
    fine = crontick.enqueue(conn, "t_kids.returns_odd", {"odd": False})
    tick(database_url)
    assert [job_row(conn, i)["status"] for i in (odd, fine)] == ["done", "done"]
    kept = conn.execute("select job_id, result from job_steps where name = 'crontick:result' order by job_id")
    assert kept.fetchall() == [(fine, {"ok": True})]


def test_a_joins_timeout_bounds_the_whole_wait_not_each_wake(database_url: str, conn: psycopg.Connection[Any]) -> None:
    parent_id = crontick.enqueue(conn, "t_kids.sync_parent", {})
    tick(database_url)  # two children due in an hour; the parent waits, its join's deadline an hour away
    first = conn.execute(
        "select wait_until from job_steps where job_id = %(p)s and name = 'kids-done#0'", {"p": parent_id}
    ).fetchone()
    assert first is not None and first[0] is not None
    # A wake while both children are still pending (a stale signal on the join's key): the parent waits again.
    with conn.transaction():
        crontick.signal(conn, f"crontick.join:{parent_id}", {"stale": True})
    tick(database_url)
    again = conn.execute(
        "select wait_until from job_steps where job_id = %(p)s and name = 'kids-done#1'", {"p": parent_id}
    ).fetchone()
    assert again is not None, "the parent did not wait a second time"
    assert again[0] == first[0]  # ends with the first wait, not an hour after this one began
    assert job_row(conn, parent_id)["status"] == "waiting"
    assert job_row(conn, parent_id)["run_after"] == first[0]
    # Once that deadline passes, the join returns the children as they are.
    conn.execute("update jobs set run_after = now() - interval '1 second' where id = %(p)s", {"p": parent_id})
    conn.execute(
        "update job_steps set wait_until = now() - interval '1 second' where job_id = %(p)s and status = 'waiting'",
        {"p": parent_id},
    )
    tick(database_url)
    if parent_id not in joined:
        tick(database_url)
    assert [c["status"] for c in joined[parent_id]] == ["pending", "pending"]
    assert job_row(conn, parent_id)["status"] == "done"
