"""`crontick retry`, `run-now` and `resume` start a tick once their transaction has committed
(crontick.cli.admin.kick), through the installed script: the work they make due now does not wait for the scheduler
(issue 35). Inline with CRONTICK_HANDLERS, by a wake-up booked for now with CRONTICK_KICK=off and a waker (the
QStash stand-in delivering to the app under uvicorn), and nothing inline without the app's handlers."""

from __future__ import annotations

import json
import time
from typing import Any

import psycopg

from tests.support import core_jobs  # noqa: F401  (registers the t_core.* job types for the app under uvicorn)
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import job_row
from tests.support.credentials import QSTASH_CURRENT, QSTASH_NEXT
from tests.support.job_rows import insert_jobs
from tests.support.run_cli import cli_env, crontick
from tests.support.waking import TOKEN, waking_app

WAIT_SECONDS = 20.0  # how long the delivery and its tick may take on a busy machine: not a promise on speed


def test_retry_runs_the_job_in_this_process_when_it_knows_the_handlers(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    [job_id] = insert_jobs(conn, 1, type="t_core.ok")
    env = cli_env(database_url, CRONTICK_HANDLERS="tests.support.core_jobs")
    result = crontick("retry", str(job_id), env=env)
    assert result.returncode == 0, result.stderr
    assert (job_row(conn, job_id)["status"], job_row(conn, job_id)["attempts"]) == ("done", 2)
    assert conn.execute("select source from crontick_ticks").fetchall() == [("kick",)]


def test_without_the_handlers_an_inline_kick_starts_nothing(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [job_id] = insert_jobs(conn, 1, type="t_core.ok")
    # Created long ago: a tick in a process without its handler would fail it for an unknown type.
    conn.execute("update jobs set created_at = now() - interval '30 days' where id = %s", (job_id,))
    result = crontick("retry", str(job_id), env=cli_env(database_url))
    assert result.returncode == 0, result.stderr
    assert job_row(conn, job_id)["status"] == "pending"
    assert conn.execute("select count(*) from crontick_ticks").fetchone() == (0,)
    # Why nothing ran, as one JSON line on stderr (crontick.logs.setup): before, the CLI's info lines were dropped.
    skipped = [json.loads(line) for line in result.stderr.splitlines() if '"kick_skipped"' in line]
    assert len(skipped) == 1 and "CRONTICK_HANDLERS" in skipped[0]["reason"]


def test_resume_with_kicks_off_books_a_wakeup_for_now_whose_delivery_runs_the_job(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with waking_app(database_url, kick="off") as (url, stand_in):
        env = cli_env(database_url, CRONTICK_KICK="off", CRONTICK_WAKER="qstash", QSTASH_TOKEN=TOKEN,
                      QSTASH_URL=stand_in.url, CRONTICK_PUBLIC_URL=url, CRON_SECRET=TEST_SECRET,
                      QSTASH_CURRENT_SIGNING_KEY=QSTASH_CURRENT, QSTASH_NEXT_SIGNING_KEY=QSTASH_NEXT)  # fmt: skip
        paused = crontick("pause", "type", "t_core.ok", env=env)
        assert paused.returncode == 0, paused.stderr
        [job_id] = insert_jobs(conn, 1, status="pending", type="t_core.ok")
        assert stand_in.published == []  # a pause books nothing
        asked = time.time()
        resumed = crontick("resume", "type", "t_core.ok", env=env)
        assert resumed.returncode == 0, resumed.stderr
        assert len(stand_in.published) == 1  # booked before the command returned
        (delivery,) = stand_in.wait_delivered(1, timeout=WAIT_SECONDS)
        assert asked - 1 <= delivery.due_at <= time.time() + 1  # for now, not a minute or a day later
        assert delivery.url == url + "/api/cron/tick" and delivery.statuses == [200]
        deadline = time.monotonic() + WAIT_SECONDS
        while job_row(conn, job_id)["status"] != "done" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert job_row(conn, job_id)["status"] == "done"
