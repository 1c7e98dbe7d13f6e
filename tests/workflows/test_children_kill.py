"""Child jobs under kill -9, with real tick processes: a parent killed after its spawn was recorded spawns nothing
again, a child killed mid-run is rescued and ends, and the join returns every child's status and result once."""

from __future__ import annotations

import subprocess
import time
from typing import Any

import psycopg
import pytest

import crontick
from tests.support.core_jobs import job_row
from tests.support.run_cli import cli_env, spawn
from tests.support.run_cli import crontick as run_crontick
from tests.support.workflow_handlers import KIDS, STEP_CALLS_TABLE_SQL

HANDLERS = "tests.support.workflow_handlers"


def _calls(conn: psycopg.Connection[Any], job_id: int | None = None) -> dict[str, int]:
    rows = conn.execute(
        "select step, count(*) from step_calls where %(id)s::bigint is null or job_id = %(id)s group by step",
        {"id": job_id},
    )
    return dict(rows.fetchall())


def _kill_once_called(conn: psycopg.Connection[Any], env: dict[str, str], step: str) -> None:
    """Run ticks (each a process) until one is inside `step`, then SIGKILL it there."""
    victim: subprocess.Popen[str] = spawn("tick", env=env)
    deadline = time.monotonic() + 60
    while _calls(conn).get(step, 0) == 0:
        assert time.monotonic() < deadline, f"expected a tick to call {step}"
        if victim.poll() is not None:  # that tick ended before reaching it (the children were due later)
            victim = spawn("tick", env=env)
        time.sleep(0.05)
    victim.kill()
    victim.communicate(timeout=10)


def _finish(conn: psycopg.Connection[Any], env: dict[str, str], parent_id: int) -> None:
    """The killed ticks' leases expire; ticks run until the parent has ended."""
    conn.execute("update jobs set locked_until = now() - interval '1 minute' where status = 'running'")
    for _ in range(5):
        result = run_crontick("tick", "--drain", env=env)
        assert result.returncode == 0, result.stderr
        if job_row(conn, parent_id)["status"] == "done":
            return
        conn.execute("update jobs set run_after = now() where status = 'pending'")
    raise AssertionError(f"expected the parent done, got {job_row(conn, parent_id)}")


@pytest.mark.slow
@pytest.mark.parametrize("hang", ["parent", 1])
def test_a_kill_between_spawn_and_join_or_inside_a_child_spawns_no_child_twice(
    database_url: str, conn: psycopg.Connection[Any], hang: Any
) -> None:
    conn.execute(STEP_CALLS_TABLE_SQL)
    parent_id = crontick.enqueue(conn, "t_wfproc.parent", {"hang": hang})
    env = cli_env(database_url, CRONTICK_HANDLERS=HANDLERS)
    _kill_once_called(conn, env, "between" if hang == "parent" else f"kid{hang}")
    kids_before = [r[0] for r in conn.execute("select id from jobs where parent_id = %s order by id", (parent_id,))]
    assert len(kids_before) == KIDS
    _finish(conn, env, parent_id)
    kids = [r[0] for r in conn.execute("select id from jobs where parent_id = %s order by id", (parent_id,))]
    assert kids == kids_before  # no child spawned twice
    spawned = conn.execute("select count(*) from job_steps where job_id = %s and name = 'kids'", (parent_id,))
    assert spawned.fetchone() == (1,)
    summary = conn.execute("select result from job_steps where job_id = %s and name = 'summary'", (parent_id,))
    assert summary.fetchone() == ([["done", {"n": n}] for n in range(KIDS)],)
    calls = _calls(conn)
    if hang == "parent":  # the step in flight at the kill runs again; the children ran after it, once each
        assert calls == {"between": 2, "summary": 1, **{f"kid{n}": 1 for n in range(KIDS)}}
    else:  # the killed batch's children run again (their outcomes were not recorded: a job's at-least-once)
        assert calls.pop(f"kid{hang}") == 2 and set(calls.values()) <= {1, 2}
        assert (calls["between"], calls["summary"]) == (1, 1)
    assert [job_row(conn, k)["status"] for k in kids] == ["done"] * KIDS
