"""job.wait_for(..., since=): a kept signal sent before the waiting job was created is no answer to it (by default),
one sent after it is (before the wait began, too), since=None takes any, and a datetime is an explicit bound."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

import crontick
from tests.support.core_jobs import db_now, job_row, tick

answers: dict[int, Any] = {}


@crontick.handler("t_wfsince.survey")
async def survey(payload: Any, job: crontick.Job) -> None:
    """payload: key, and since ("job" or absent: the default; None; an ISO 8601 instant; "naive": a naive datetime)."""
    if "since" not in payload or payload["since"] == "job":
        answer = await job.wait_for("answer", payload["key"], timeout_seconds=3600)
    elif payload["since"] is None:
        answer = await job.wait_for("answer", payload["key"], timeout_seconds=3600, since=None)
    elif payload["since"] == "naive":
        answer = await job.wait_for("answer", payload["key"], timeout_seconds=3600, since=datetime(2026, 1, 1))
    else:
        answer = await job.wait_for(
            "answer", payload["key"], timeout_seconds=3600, since=datetime.fromisoformat(payload["since"])
        )
    answers[job.id] = answer


def _kept(conn: psycopg.Connection[Any]) -> list[Any]:
    return [r[0] for r in conn.execute("select payload from crontick_signals order by id").fetchall()]


def test_a_signal_sent_before_the_job_was_created_does_not_answer_its_wait(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    assert crontick.signal(conn, "survey:ada", {"text": "an answer to last week's survey"}) is None
    job_id = crontick.enqueue(conn, "t_wfsince.survey", {"key": "survey:ada"})
    tick(database_url, now=db_now(conn))
    assert job_row(conn, job_id)["status"] == "waiting"  # the old answer is not this job's
    assert _kept(conn) == [{"text": "an answer to last week's survey"}]  # still kept, for a wait that takes it
    assert crontick.signal(conn, "survey:ada", {"text": "this week's"}) == job_id  # a new answer wakes it
    assert tick(database_url, now=db_now(conn)).jobs.succeeded == 1
    assert answers[job_id] == {"text": "this week's"}


def test_since_none_takes_a_signal_sent_before_the_job_was_created(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    assert crontick.signal(conn, "survey:bob", {"text": "early"}) is None
    job_id = crontick.enqueue(conn, "t_wfsince.survey", {"key": "survey:bob", "since": None})
    parked = tick(database_url, now=db_now(conn))
    assert parked.more and job_row(conn, job_id)["status"] == "pending"  # delivered as the wait began
    assert _kept(conn) == []
    assert tick(database_url, now=db_now(conn)).jobs.succeeded == 1
    assert answers[job_id] == {"text": "early"}


def test_a_signal_sent_after_the_job_was_created_and_before_its_wait_began_is_delivered(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_wfsince.survey", {"key": "survey:cy"})
    assert crontick.signal(conn, "survey:cy", {"text": "quick"}) is None  # nobody waits yet: kept
    parked = tick(database_url, now=db_now(conn))
    assert parked.more and job_row(conn, job_id)["status"] == "pending"
    assert tick(database_url, now=db_now(conn)).jobs.succeeded == 1
    assert answers[job_id] == {"text": "quick"}


def test_since_a_datetime_takes_only_signals_sent_at_or_after_it(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_wfsince.survey", {"key": "survey:di"})
    assert crontick.signal(conn, "survey:di", {"text": "before the question"}) is None
    asked = conn.execute("select now()").fetchone()[0]  # type: ignore[index]
    assert crontick.signal(conn, "survey:di", {"text": "after the question"}) is None
    since = Jsonb({"since": asked.isoformat()})  # what the handler reads: when it asked, as a step would record it
    conn.execute("update jobs set payload = payload || %(since)s where id = %(id)s", {"since": since, "id": job_id})
    parked = tick(database_url, now=db_now(conn))
    assert parked.more and job_row(conn, job_id)["status"] == "pending"
    assert tick(database_url, now=db_now(conn)).jobs.succeeded == 1
    assert answers[job_id] == {"text": "after the question"}  # the older kept signal is passed over
    assert _kept(conn) == [{"text": "before the question"}]


def test_a_naive_since_fails_the_attempt_with_what_was_expected(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_wfsince.survey", {"key": "survey:ed", "since": "naive"}, max_attempts=1)
    assert tick(database_url, now=db_now(conn)).jobs.failed == 1
    assert job_row(conn, job_id)["last_error"] == (
        f"StepError: job {job_id} (t_wfsince.survey) job.wait_for('answer'): expected since='job', None or a "
        "timezone-aware datetime, got datetime.datetime(2026, 1, 1, 0, 0)"
    )
