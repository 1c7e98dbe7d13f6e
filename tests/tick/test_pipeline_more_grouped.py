"""A tick answers `more: true` only when due work is really left (issue 35): a grouped job that ends lets its group
move on, and that is more work only when the group's next job is due now and not paused.

Before, every finished grouped job made the tick answer `more: true` (26 of 46 calls in one run), so a scheduler or
a waker that follows `more` called again for nothing. Both paths of the record statement
(sql/functions/job_record_outcomes.sql) are held here: all succeeded, and a batch with a failure.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg

import crontick
from tests.support import core_jobs
from tests.support.core_jobs import tick


def grouped(conn: psycopg.Connection[Any], kind: str, group: str | None, *, later: float = 0) -> int:
    at: datetime | None = None
    if later:
        at = conn.execute("select now() + make_interval(secs => %s)", (later,)).fetchone()[0]  # type: ignore[index]
    return crontick.enqueue(conn, kind, {}, group_key=group, run_after=at, max_attempts=5)


def last_logged_next_due(conn: psycopg.Connection[Any]) -> Any:
    row = conn.execute("select summary ->> 'next_due_at' from crontick_ticks order by id desc limit 1").fetchone()
    assert row is not None
    return row[0]


def test_a_group_of_one_job_leaves_nothing_more(database_url: str, conn: psycopg.Connection[Any]) -> None:
    grouped(conn, "t_core.ok", "chat:1")
    result = tick(database_url, core_jobs.settings_for(database_url))
    assert (result.jobs.claimed, result.jobs.succeeded) == (1, 1)
    assert (result.more, result.next_due_at) == (False, None)
    assert last_logged_next_due(conn) is None


def test_a_group_whose_next_job_is_due_answers_more(database_url: str, conn: psycopg.Connection[Any]) -> None:
    first, second = grouped(conn, "t_core.ok", "chat:1"), grouped(conn, "t_core.ok", "chat:1")
    settings = core_jobs.settings_for(database_url)
    result = tick(database_url, settings)
    assert (result.jobs.claimed, result.more) == (1, True)  # the group moved on to a job due now
    again = tick(database_url, settings)
    assert (again.jobs.claimed, again.more, again.next_due_at) == (1, False, None)
    done = conn.execute("select count(*) from jobs where id in (%s, %s) and status = 'done'", (first, second))
    assert done.fetchone() == (2,)


def test_a_group_whose_next_job_is_due_later_answers_that_time(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    grouped(conn, "t_core.ok", "chat:1")
    later = grouped(conn, "t_core.ok", "chat:1", later=3600)
    due_at: datetime = conn.execute("select run_after from jobs where id = %s", (later,)).fetchone()[0]  # type: ignore[index]
    result = tick(database_url, core_jobs.settings_for(database_url))
    assert (result.jobs.succeeded, result.more, result.next_due_at) == (1, False, due_at)
    assert datetime.fromisoformat(last_logged_next_due(conn)) == due_at  # the log row agrees with the answer


def test_a_group_whose_next_job_is_of_a_paused_type_answers_no_more(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    grouped(conn, "t_core.ok", "chat:1")
    grouped(conn, "t_core.ok_sync", "chat:1")
    conn.execute("insert into crontick_pauses (kind, name) values ('type', 't_core.ok_sync')")
    result = tick(database_url, core_jobs.settings_for(database_url))
    # The paused job is held back, not due: no `more`, and no time to wake up for (a pause has no end).
    assert (result.jobs.succeeded, result.more, result.next_due_at) == (1, False, None)


def test_a_batch_with_a_failure_answers_more_only_for_due_work(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    grouped(conn, "t_core.ok", "chat:1")  # ends its group
    failing = grouped(conn, "t_core.fail", None)  # the general path of the record statement: retried later
    result = tick(database_url, core_jobs.settings_for(database_url))
    retry_at = conn.execute("select run_after from jobs where id = %s", (failing,)).fetchone()[0]  # type: ignore[index]
    assert (result.jobs.succeeded, result.jobs.retried) == (1, 1)
    assert (result.more, result.next_due_at) == (False, retry_at)
