"""slow_job (CRONTICK_SLOW_JOB_SECONDS): logged once, while the job still runs, so a job the budget cuts warns first;
the attempt counted slow in the per-type ring (the admin's figures, GET /api/metrics) whatever it ended in."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import crontick
from tests.support.core_jobs import db_now, job_row, settings_for, tick

LINES: list[dict[str, Any]] = []  # the slow_job lines logged so far, in order
SEEN: dict[int, list[dict[str, Any]]] = {}  # job id -> its slow_job lines logged before its handler returned


class _SlowLines(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        line = json.loads(record.getMessage())
        if line["event"] == "slow_job":
            LINES.append(line)


@pytest.fixture(autouse=True)
def slow_lines() -> Iterator[None]:
    LINES.clear()
    SEEN.clear()
    handler, logger = _SlowLines(), logging.getLogger("crontick")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _mine(job_id: int) -> list[dict[str, Any]]:
    return [line for line in LINES if line["job_id"] == job_id]


@crontick.handler("t_slow.async")
async def slow_async(payload: Any, job: crontick.Job) -> None:
    await asyncio.sleep(payload["seconds"])
    SEEN[job.id] = _mine(job.id)


@crontick.handler("t_slow.sync")
def slow_sync(payload: Any, job: crontick.Job) -> None:
    time.sleep(payload["seconds"])
    SEEN[job.id] = _mine(job.id)


def _ring(conn: psycopg.Connection[Any], type: str) -> tuple[int, int, int]:
    row = conn.execute(
        "select coalesce(sum(done), 0)::int, coalesce(sum(retried), 0)::int, coalesce(sum(slow), 0)::int"
        " from crontick_type_minutes where type = %s",
        (type,),
    ).fetchone()
    assert row is not None
    return row


@pytest.mark.parametrize("type", ["t_slow.async", "t_slow.sync"])
def test_a_slow_job_warns_while_it_runs_once_and_is_counted_not_failed(
    database_url: str, conn: psycopg.Connection[Any], type: str
) -> None:
    job_id = crontick.enqueue(conn, type, {"seconds": 0.8})
    settings = settings_for(database_url, time_budget_seconds=5.0, lease_seconds=40.0, slow_job_seconds=0.2)
    assert tick(database_url, settings, now=db_now(conn)).jobs.succeeded == 1
    assert job_row(conn, job_id)["status"] == "done"
    [line] = SEEN[job_id]  # logged before the handler returned
    assert (line["job_type"], line["attempt"], line["slow_job_seconds"]) == (type, 1, 0.2)
    assert line["seconds"] < 0.8  # when it crossed the threshold, not when it ended
    assert len(_mine(job_id)) == 1  # not again at its end
    assert _ring(conn, type) == (1, 0, 1)


def test_a_job_the_budget_cuts_warns_before_the_cut_and_counts_slow(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_slow.async", {"seconds": 30})
    settings = settings_for(database_url, time_budget_seconds=1.5, lease_seconds=40.0, slow_job_seconds=0.3)
    assert tick(database_url, settings, now=db_now(conn)).jobs.retried == 1
    assert job_row(conn, job_id)["last_error"].startswith("TimeoutError: ")
    [line] = _mine(job_id)
    assert line["seconds"] < 1.5  # logged at the threshold, before the budget's cut
    assert _ring(conn, "t_slow.async") == (0, 1, 1)


def test_a_quick_job_is_not_slow(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_slow.async", {"seconds": 0})
    settings = settings_for(database_url, time_budget_seconds=5.0, lease_seconds=40.0, slow_job_seconds=2.0)
    assert tick(database_url, settings, now=db_now(conn)).jobs.succeeded == 1
    assert LINES == [] and job_id not in {line["job_id"] for line in LINES}
    assert _ring(conn, "t_slow.async") == (1, 0, 0)
