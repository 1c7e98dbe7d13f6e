"""A cancel racing a workflow's last step, over real ticks (check_cancel in crontick.workflows.children): committed just
before the step starts, the step is not called and the job ends cancelled; committed while it runs, a step that
finishes leaves the job done (its work happened), and one that raises leaves it cancelled (its error kept), never retried. No alert."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

import crontick
from crontick.workflows.children import CANCEL_CHECK_SECONDS
from tests.support.core_jobs import job_row, tick

reached = threading.Event()
release = threading.Event()
last_calls: list[int] = []


def _first() -> str:
    return "ok"


def _last(job_id: int, mode: str) -> str:
    last_calls.append(job_id)
    if mode.startswith("during"):
        reached.set()
        assert release.wait(10)
    if mode == "during_raise":
        raise ConnectionError("the provider hung up")
    return "sent"


@crontick.handler("t_race.last")
def last(payload: Any, job: crontick.Job) -> None:
    job.step("first", _first)
    if payload["mode"] == "before":
        reached.set()
        assert release.wait(10)
    job.step("last", _last, job.id, payload["mode"])


@pytest.fixture(autouse=True)
def _fresh() -> None:
    reached.clear()
    release.clear()
    last_calls.clear()


@pytest.mark.parametrize(
    ("mode", "status", "called"), [("before", "cancelled", 0), ("during", "done", 1), ("during_raise", "cancelled", 1)]
)
def test_a_cancel_racing_the_last_step(
    database_url: str, conn: psycopg.Connection[Any], mode: str, status: str, called: int
) -> None:
    job_id = crontick.enqueue(conn, "t_race.last", {"mode": mode})
    runner = threading.Thread(target=tick, args=(database_url,))
    runner.start()
    assert reached.wait(10)
    assert crontick.cancel(conn, job_id) is True  # committed (autocommit) while the job runs
    if mode == "before":
        time.sleep(CANCEL_CHECK_SECONDS + 0.1)  # the batch reads who was asked to stop before the next step
    release.set()
    runner.join(30)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], len(last_calls)) == (status, 1, called)
    if mode == "before":
        assert row["last_error"].startswith("Cancelled: job"), row["last_error"]
    if mode == "during_raise":  # cancelled, keeping what went wrong
        assert row["last_error"] == "ConnectionError: the provider hung up"
    steps = conn.execute("select name from job_steps where job_id = %s order by name", (job_id,)).fetchall()
    assert steps == ([("first",), ("last",)] if status == "done" else [("first",)])
    assert conn.execute("select count(*) from crontick_alerts").fetchone() == (0,)
    conn.execute("update jobs set run_after = now() where id = %s", (job_id,))
    tick(database_url)  # nothing runs it again
    assert (job_row(conn, job_id)["status"], len(last_calls)) == (status, called)
