"""Steps across kill -9, with real tick processes: a recorded step is not called again; a step whose function finished
but whose result was not recorded is the one that runs again (at-least-once, the case job.step_key is for)."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

import crontick
from tests.support.core_jobs import job_row, wait_for
from tests.support.run_cli import cli_env, spawn
from tests.support.run_cli import crontick as run_crontick
from tests.support.workflow_handlers import STEP_CALLS_TABLE_SQL

HANDLERS = "tests.support.workflow_handlers"


def _calls(conn: psycopg.Connection[Any], job_id: int) -> dict[str, int]:
    rows = conn.execute("select step, count(*) from step_calls where job_id = %(id)s group by step", {"id": job_id})
    return dict(rows.fetchall())


def _expire_leases(conn: psycopg.Connection[Any]) -> None:
    conn.execute("update jobs set locked_until = now() - interval '1 minute' where status = 'running'")


@pytest.mark.slow
def test_a_tick_killed_during_step_2_does_not_call_step_1_again(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(STEP_CALLS_TABLE_SQL)
    job_id = crontick.enqueue(conn, "t_wfproc.pipeline", {"text": "hello"})
    env = cli_env(database_url, CRONTICK_HANDLERS=HANDLERS)
    victim = spawn("tick", env=env)
    wait_for(conn, "select count(*) from step_calls where step = 'llm'", 1, "step 2 to start")
    # Step 1 was recorded before step 2 began.
    assert conn.execute("select name from job_steps where job_id = %(id)s", {"id": job_id}).fetchall() == [("context",)]
    victim.kill()  # SIGKILL inside step 2: no cleanup, no outcome
    victim.communicate(timeout=10)
    assert (job_row(conn, job_id)["status"], job_row(conn, job_id)["attempts"]) == ("running", 1)
    _expire_leases(conn)
    result = run_crontick("tick", env=env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["jobs"]["rescued"], summary["jobs"]["succeeded"]) == (1, 1)
    assert _calls(conn, job_id) == {"context": 1, "llm": 2, "send": 1}
    send = conn.execute("select result from job_steps where job_id = %(id)s and name = 'send'", {"id": job_id})
    assert send.fetchone()[0].startswith(f"crontick-{job_id}-")  # type: ignore[index]


@pytest.mark.slow
def test_a_step_whose_result_was_not_recorded_runs_again(database_url: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute(STEP_CALLS_TABLE_SQL)
    job_id = crontick.enqueue(conn, "t_wfproc.unrecorded", {})
    env = cli_env(database_url, CRONTICK_HANDLERS=HANDLERS)
    killed = run_crontick("tick", env=env)
    assert killed.returncode == -9  # the step's function finished its work, then its process died
    assert conn.execute("select count(*) from job_steps where job_id = %(id)s", {"id": job_id}).fetchone() == (0,)
    _expire_leases(conn)
    result = run_crontick("tick", env=env)
    assert result.returncode == 0, result.stderr
    assert job_row(conn, job_id)["status"] == "done"
    assert _calls(conn, job_id) == {"charge": 2}  # the one re-run no system can avoid: step_key is the defence
