"""job.spawn(..., start_by=...): each child gets the deadline to start that crontick.enqueue's start_by gives (seconds
from now by the database's clock, or an aware datetime); a child not started by then ends `cancelled` "expired: ..."
in the claim, and the parent's join sees it so. A bad start_by fails the parent's attempt for good, saying why."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

import crontick
from tests.support.core_jobs import job_row, tick

joined: dict[int, Any] = {}
ran: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    joined.clear()
    ran.clear()


@crontick.handler("t_kids_by.child")
def child(payload: Any, job: crontick.Job) -> str:
    ran[payload["n"]] += 1
    return "ran"


@crontick.handler("t_kids_by.parent")
def parent(payload: Any, job: crontick.Job) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)  # held back: the test decides when each may start
    start_by = payload["start_by"]
    if isinstance(start_by, str):
        start_by = datetime.fromisoformat(start_by)
    ids = job.spawn("kids", "t_kids_by.child", [{"n": "a"}, {"n": "b"}], run_after=later, start_by=start_by)
    joined[job.id] = job.join("kids-done", ids, timeout_seconds=7200)


def _children(conn: psycopg.Connection[Any], parent_id: int) -> list[int]:
    return [r[0] for r in conn.execute("select id from jobs where parent_id = %(p)s order by id", {"p": parent_id})]


def test_a_child_not_started_by_its_deadline_ends_cancelled_expired_and_the_join_sees_it(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    parent_id = crontick.enqueue(conn, "t_kids_by.parent", {"start_by": 5400})
    tick(database_url)  # it spawns two children (due in an hour, to start within 90 minutes) and parks
    late, timely = _children(conn, parent_id)
    for kid in (late, timely):  # the deadline is the database's now plus 5,400 s, for each child
        seconds = conn.execute(
            "select extract(epoch from start_by - created_at) from jobs where id = %(id)s", {"id": kid}
        ).fetchone()
        assert seconds is not None and 5399 < float(seconds[0]) < 5401
    assert job_row(conn, parent_id)["status"] == "waiting"
    # Time passes for one child past its deadline, the other becomes due in time.
    conn.execute("update jobs set start_by = now() - interval '1 second' where id = %(id)s", {"id": late})
    conn.execute("update jobs set run_after = now() where id = %(id)s", {"id": timely})
    for _ in range(3):
        if parent_id in joined:
            break
        tick(database_url)
    row = job_row(conn, late)
    assert (row["status"], row["attempts"], row["started_at"]) == ("cancelled", 0, None)
    assert row["last_error"].startswith("expired: not started by its start_by (")
    assert ran == {"b": 1}  # the expired child never ran
    assert joined[parent_id] == [
        {"id": late, "status": "cancelled", "result": None},
        {"id": timely, "status": "done", "result": "ran"},
    ]
    assert job_row(conn, parent_id)["status"] == "done"
    assert conn.execute("select count(*) from crontick_alerts").fetchone() == (0,)


def test_a_datetime_start_by_is_each_childs_as_given(database_url: str, conn: psycopg.Connection[Any]) -> None:
    deadline = datetime.now(UTC) + timedelta(hours=2)
    parent_id = crontick.enqueue(conn, "t_kids_by.parent", {"start_by": deadline.isoformat()})
    tick(database_url)
    kids = _children(conn, parent_id)
    assert len(kids) == 2
    assert [job_row(conn, k)["start_by"] for k in kids] == [deadline, deadline]


@pytest.mark.parametrize(
    ("start_by", "expected"),
    [
        (0, "expected start_by as a timezone-aware datetime or seconds from now (above 0, at most 31536000), got: 0"),
        ("soon", "expected start_by as a timezone-aware datetime or seconds from now"),
        # a deadline before the children's run_after (an hour away): they could never start
        ("2000-01-01T00:00:00+00:00", "expected run_after at or before start_by (it could never start)"),
    ],
)
def test_a_bad_start_by_fails_the_parent_for_good_and_spawns_nothing(
    database_url: str, conn: psycopg.Connection[Any], start_by: Any, expected: str
) -> None:
    if start_by == "soon":
        payload: dict[str, Any] = {"start_by": None}
        parent_id = crontick.enqueue(conn, "t_kids_by.bad", payload)
    else:
        parent_id = crontick.enqueue(conn, "t_kids_by.parent", {"start_by": start_by})
    tick(database_url)
    row = job_row(conn, parent_id)
    assert (row["status"], row["attempts"]) == ("failed", 1)  # a StepError: no retry
    assert "job.spawn('kids')" in row["last_error"]
    assert expected in row["last_error"]
    assert _children(conn, parent_id) == []


@crontick.handler("t_kids_by.bad")
def bad(payload: Any, job: crontick.Job) -> None:
    job.spawn("kids", "t_kids_by.child", [{"n": "a"}], start_by="soon")
