"""start_by in the claim (sql/functions/job_claim_due.sql, its `expire` part): a pending job past its start_by whose
handler never ran ends `cancelled` in the statement that claims the batch, never runs, spends no attempt and raises no
alert; a job that did run (a retry waiting, a sleep) is not expired; and an expired job costs the tick no statement."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

import crontick
from crontick.settings import Settings
from crontick.tick.pipeline import TickResult, run_tick
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import db_now, job_row, tick
from tests.support.wire import traced

ran: list[str] = []


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()


@crontick.handler("t_start_by.reply")
def reply(payload: Any, job: crontick.Job) -> None:
    ran.append(payload["n"])


def _expire(conn: psycopg.Connection[Any], job_id: int) -> None:
    """Moves the job's start_by (and run_after) a minute into the past: time passed without a tick."""
    conn.execute(
        "update jobs set start_by = now() - interval '1 minute', run_after = now() - interval '2 minutes'"
        " where id = %(id)s",
        {"id": job_id},
    )


def test_a_job_past_its_start_by_ends_cancelled_unrun_with_no_attempt_and_no_alert(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    late = crontick.enqueue(conn, "t_start_by.reply", {"n": "late"}, start_by=600)
    timely = crontick.enqueue(conn, "t_start_by.reply", {"n": "timely"}, start_by=600)
    _expire(conn, late)
    result = tick(database_url)
    assert ran == ["timely"]
    row = job_row(conn, late)
    assert (row["status"], row["attempts"], row["started_at"]) == ("cancelled", 0, None)
    assert row["last_error"].startswith("expired: not started by its start_by (")
    assert row["finished_at"] is not None
    assert job_row(conn, timely)["status"] == "done"
    assert result.jobs.claimed == 1 and result.jobs.failed == 0
    assert conn.execute("select count(*) from crontick_alerts").fetchone() == (0,)
    assert conn.execute("select count(*) from job_attempts where job_id = %(id)s", {"id": late}).fetchone() == (0,)


def test_a_job_not_yet_due_is_expired_too_and_one_held_in_its_group_lets_the_group_move_on(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    now = db_now(conn)
    later = crontick.enqueue(conn, "t_start_by.reply", {"n": "never"}, run_after=now + timedelta(hours=1))
    conn.execute("update jobs set start_by = now() - interval '1 second' where id = %(id)s", {"id": later})
    head = crontick.enqueue(conn, "t_start_by.reply", {"n": "head"}, group_key="conv:1", start_by=600)
    behind = crontick.enqueue(conn, "t_start_by.reply", {"n": "behind"}, group_key="conv:1")
    _expire(conn, head)
    tick(database_url)
    if "behind" not in ran:  # the head's end let it go: this tick or the next runs it
        tick(database_url)
    assert ran == ["behind"]
    assert [job_row(conn, i)["status"] for i in (later, head, behind)] == ["cancelled", "cancelled", "done"]


@crontick.handler("t_start_by.flaky", retry=crontick.Retry((3600,)))
def flaky(payload: Any, job: crontick.Job) -> None:
    ran.append(f"attempt {job.attempt}")
    if job.attempt == 1:
        raise RuntimeError("once")


@crontick.handler("t_start_by.sleeper")
def sleeper(payload: Any, job: crontick.Job) -> None:
    job.sleep("nap", 3600)
    ran.append("woke")


def test_a_job_whose_handler_ran_is_never_expired(database_url: str, conn: psycopg.Connection[Any]) -> None:
    retried = crontick.enqueue(conn, "t_start_by.flaky", {}, start_by=600)
    slept = crontick.enqueue(conn, "t_start_by.sleeper", {}, start_by=600)
    tick(database_url)  # the first fails its attempt, the second sleeps: both ran, both pending again
    assert [job_row(conn, i)["status"] for i in (retried, slept)] == ["pending", "pending"]
    conn.execute("update jobs set start_by = now() - interval '1 minute', run_after = now() - interval '1 second'")
    tick(database_url)
    assert [job_row(conn, i)["status"] for i in (retried, slept)] == ["done", "done"]
    assert ran == ["attempt 1", "attempt 2", "woke"]


def test_a_job_handed_back_unstarted_still_expires(database_url: str, conn: psycopg.Connection[Any]) -> None:
    """Claimed, then put back without running (the budget's tail, an unknown type): started_at is set, but no
    attempt, snooze or step was kept, so its handler never ran."""
    job_id = crontick.enqueue(conn, "t_start_by.reply", {"n": "handed back"}, start_by=600)
    conn.execute("update jobs set started_at = now(), attempts = 0 where id = %(id)s", {"id": job_id})
    _expire(conn, job_id)
    tick(database_url)
    assert ran == [] and job_row(conn, job_id)["status"] == "cancelled"


def _traced_tick(url: str, now: datetime) -> tuple[TickResult, list[str]]:
    settings = Settings(database_url=url, cron_secret=TEST_SECRET, reminder_channel="console")
    return traced(url, lambda c: run_tick(c, settings, now=now, source="test"))


def test_an_expired_job_costs_the_tick_no_statement(database_url: str, conn: psycopg.Connection[Any]) -> None:
    crontick.enqueue(conn, "t_start_by.reply", {"n": "due"})
    _, plain = _traced_tick(database_url, db_now(conn))
    crontick.enqueue(conn, "t_start_by.reply", {"n": "due again"})
    for n in range(20):
        _expire(conn, crontick.enqueue(conn, "t_start_by.reply", {"n": f"late {n}"}, start_by=600))
    result, with_expired = _traced_tick(database_url, db_now(conn))
    assert with_expired == plain == ["tick_probe", "job_record_outcomes"]
    assert result.jobs.succeeded == 1 and not result.more
    assert ran == ["due", "due again"]
    assert conn.execute("select count(*) from jobs where status = 'cancelled'").fetchone() == (20,)


def test_the_flow_controlled_claim_expires_too_even_a_job_of_a_paused_type(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """A pause sends the claim down its flow-control body, whose `expire` part is the plain body's twin."""
    conn.execute("insert into crontick_pauses (kind, name) values ('type', 't_start_by.paused')")
    paused = crontick.enqueue(conn, "t_start_by.paused", {}, start_by=600)
    late = crontick.enqueue(conn, "t_start_by.reply", {"n": "late"}, start_by=600)
    timely = crontick.enqueue(conn, "t_start_by.reply", {"n": "timely"})
    _expire(conn, paused)
    _expire(conn, late)
    tick(database_url)
    assert ran == ["timely"]
    assert [job_row(conn, i)["status"] for i in (paused, late, timely)] == ["cancelled", "cancelled", "done"]
