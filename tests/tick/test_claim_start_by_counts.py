"""jobs.expired: the jobs a tick's claim ended `cancelled` past their start_by, counted by the claim statement itself
(sql/functions/job_claim_due.sql, its `expired` column), in the tick's result, its log row and line, and the JSON
`crontick tick` prints; with no statement of its own, whether the tick also ran jobs or found nothing else to do."""

from __future__ import annotations

import json
import logging
from typing import Any

import psycopg

import crontick
from crontick.settings import Settings
from crontick.tick.pipeline import TickResult, run_tick
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import db_now
from tests.support.logs import LogLines
from tests.support.run_cli import cli_env
from tests.support.run_cli import crontick as crontick_cli
from tests.support.wire import traced

ran: list[str] = []


@crontick.handler("t_expired_count.reply")
def reply(payload: Any, job: crontick.Job) -> None:
    ran.append(payload["n"])


def _late(conn: psycopg.Connection[Any], n: int) -> None:
    """`n` jobs whose start_by passed a minute ago without a tick."""
    for i in range(n):
        job_id = crontick.enqueue(conn, "t_expired_count.reply", {"n": f"late {i}"}, start_by=600)
        conn.execute(
            "update jobs set start_by = now() - interval '1 minute', run_after = now() - interval '2 minutes'"
            " where id = %(id)s",
            {"id": job_id},
        )


def _tick(url: str, conn: psycopg.Connection[Any]) -> tuple[TickResult, list[str], list[dict[str, Any]]]:
    """One tick on a traced connection: its result, the named statements it sent, and its `tick` log lines."""
    settings = Settings(database_url=url, cron_secret=TEST_SECRET, reminder_channel="console")
    lines = LogLines()
    logger = logging.getLogger("crontick")
    level = logger.level
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)  # as crontick.logs.setup leaves it in an app
    try:
        result, statements = traced(url, lambda c: run_tick(c, settings, now=db_now(conn), source="test"))
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)
    events = [json.loads(line) for line in lines.lines]
    return result, statements, [e for e in events if e.get("event") == "tick"]


def _logged(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    row = conn.execute("select summary -> 'jobs' from crontick_ticks order by id desc limit 1").fetchone()
    assert row is not None
    jobs: dict[str, Any] = row[0]
    return jobs


def test_a_tick_that_runs_jobs_counts_the_ones_its_claim_expired_in_the_same_statements(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ran.clear()
    crontick.enqueue(conn, "t_expired_count.reply", {"n": "due"})
    _late(conn, 3)
    result, statements, lines = _tick(database_url, conn)
    assert statements == ["tick_probe", "job_record_outcomes"]  # as a tick without expired jobs
    assert ran == ["due"]
    assert (result.jobs.claimed, result.jobs.succeeded, result.jobs.expired) == (1, 1, 3)
    assert result.to_json()["jobs"]["expired"] == 3
    assert _logged(conn)["expired"] == 3
    assert [line["jobs"]["expired"] for line in lines] == [3]
    # Nothing left to expire: the next tick counts none.
    crontick.enqueue(conn, "t_expired_count.reply", {"n": "due again"})
    result, _, _ = _tick(database_url, conn)
    assert (result.jobs.succeeded, result.jobs.expired) == (1, 0)
    assert _logged(conn)["expired"] == 0


def test_a_tick_that_only_expires_jobs_counts_them_too(database_url: str, conn: psycopg.Connection[Any]) -> None:
    ran.clear()
    _late(conn, 2)
    result, statements, lines = _tick(database_url, conn)
    assert ran == []
    assert statements[0] == "tick_probe" and len(statements) <= 2  # the probe, and at most the record statement
    assert (result.jobs.claimed, result.jobs.expired) == (0, 2)
    assert _logged(conn)["expired"] == 2
    assert [line["jobs"]["expired"] for line in lines] == [2]
    assert conn.execute("select count(*) from jobs where status = 'cancelled'").fetchone() == (2,)


def test_crontick_tick_prints_jobs_expired(database_url: str, conn: psycopg.Connection[Any]) -> None:
    _late(conn, 2)
    env = cli_env(database_url, CRONTICK_HANDLERS="tests.support.core_jobs")
    printed = crontick_cli("tick", env=env)
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout)["jobs"]["expired"] == 2
    printed = crontick_cli("tick", env=env)
    assert json.loads(printed.stdout)["jobs"]["expired"] == 0
