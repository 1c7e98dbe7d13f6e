"""@crontick.step(at_most_once=True) over real ticks: its start is recorded before it is called, and a later run that
finds it started and unrecorded fails the job (outcome unknown, alerted) instead of calling it again."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import psycopg
import pytest

import crontick
from tests.support.core_jobs import db_now, job_row, settings_for, tick

sends: Counter[int] = Counter()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    sends.clear()


@crontick.step(at_most_once=True)
def send_whatsapp(job_id: int, how: str) -> str:
    sends[job_id] += 1
    if how == "hang" and sends[job_id] == 1:
        time.sleep(1.5)  # the budget (1 s) cuts the handler while the provider has the message
    if how == "raise":
        raise ConnectionError("reset by peer after the request was sent")
    return "sent"


@crontick.step(at_most_once=True, retries=1)
def send_retried(job_id: int, how: str) -> str:
    sends[job_id] += 1
    if sends[job_id] == 1:
        raise ConnectionError("refused before sending")
    return "sent"


@crontick.handler("t_once.reply")
def reply(payload: Any, job: crontick.Job) -> None:
    fn = send_retried if payload["how"] == "retried" else send_whatsapp
    job.step("send", fn, job.id, payload["how"])


def _names(conn: psycopg.Connection[Any], job_id: int) -> list[str]:
    rows = conn.execute("select name from job_steps where job_id = %s order by name", (job_id,)).fetchall()
    return [r[0] for r in rows]


def test_a_step_that_finishes_costs_one_more_row_and_runs_once(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_once.reply", {"how": "ok"})
    assert tick(database_url, now=db_now(conn)).jobs.succeeded == 1
    assert sends[job_id] == 1 and _names(conn, job_id) == ["send", "send#started0"]


def test_a_step_cut_by_the_budget_is_never_called_again_and_the_job_fails_outcome_unknown(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_once.reply", {"how": "hang"})
    first = tick(database_url, settings_for(database_url, time_budget_seconds=1.0), now=db_now(conn))
    assert first.jobs.yielded == 1  # its start was recorded: progress
    assert _names(conn, job_id) == ["send#started0"]
    second = tick(database_url, now=db_now(conn))
    assert second.jobs.failed == 1
    row = job_row(conn, job_id)
    assert row["status"] == "failed" and sends[job_id] == 1
    assert (
        row["last_error"].startswith("OutcomeUnknown: job ")
        and "'send' (at_most_once) was started" in row["last_error"]
    )
    alerts = conn.execute("select count(*) from crontick_alerts where subject like %s", (f"%{job_id}%",)).fetchone()
    assert alerts is not None and alerts[0] >= 1


def test_a_step_that_raised_is_not_called_by_the_next_attempt(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_once.reply", {"how": "raise"})
    tick(database_url, now=db_now(conn))
    assert job_row(conn, job_id)["attempts"] == 1
    conn.execute("update jobs set run_after = now() where id = %s", (job_id,))
    tick(database_url, now=db_now(conn))
    row = job_row(conn, job_id)
    assert (row["status"], sends[job_id]) == ("failed", 1) and row["last_error"].startswith("OutcomeUnknown")


def test_its_own_retries_still_run_each_try_marked(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_once.reply", {"how": "retried"})
    assert tick(database_url, now=db_now(conn)).jobs.succeeded == 1
    assert sends[job_id] == 2 and _names(conn, job_id) == ["send", "send#started0", "send#started1"]
