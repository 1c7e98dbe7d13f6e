"""`crontick.kick()` from a short-lived process strands nothing it claimed (issue 35).

Measured before: 200 jobs enqueued, kick(), the process exits 0.5 s later, and 100 jobs sat `running` with an
attempt spent until their 38 s lease ran out. Now the interpreter's exit waits for the kick's batch: the jobs
running finish and are recorded, those not started go back pending without spending an attempt
(crontick.hooks.kick, crontick.jobs.shutdown). A real subprocess (tests/support/exit_kick.py) enqueues, kicks and
exits; then this process drains what is left, and every job has run exactly once.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from crontick.runtime import Runtime
from tests.support import exit_kick  # also registers the job types in this process, for the drain below
from tests.support.constants import ROOT
from tests.support.hooks import settings_for
from tests.support.run_cli import cli_env


def kick_and_exit(database_url: str, kind: str, count: int, linger_seconds: float, log: Path) -> None:
    env = cli_env(database_url, CRON_SECRET="s" * 40, CRONTICK_KICK="inline")
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.exit_kick", kind, str(count), str(linger_seconds), str(log)],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


async def drain(database_url: str) -> None:
    rt = Runtime(settings_for(database_url))
    try:
        await rt.run(source="test", drain=True)
    finally:
        await rt.close()


def by_state(conn: psycopg.Connection[Any]) -> dict[tuple[str, int], int]:
    rows = conn.execute("select status, attempts, count(*) from jobs group by 1, 2").fetchall()
    return {(str(s), int(a)): int(n) for s, a, n in rows}


def ran(log: Path) -> list[int]:
    return [int(line) for line in log.read_text().split()] if log.exists() else []


@pytest.mark.parametrize(
    ("kind", "linger_seconds"),
    [(exit_kick.WORK, 0.0), (exit_kick.WORK, 0.5), (exit_kick.WORK_SYNC, 0.5)],
)
def test_a_process_that_kicks_and_exits_leaves_no_job_running_and_none_runs_twice(
    database_url: str, conn: psycopg.Connection[Any], tmp_path: Path, kind: str, linger_seconds: float
) -> None:
    log = tmp_path / "ran.txt"
    kick_and_exit(database_url, kind, 200, linger_seconds, log)
    after_exit = by_state(conn)
    kicked = conn.execute("select count(*) from crontick_ticks where source = 'kick'").fetchone()
    assert kicked is not None and kicked[0] >= 1  # the kick's tick ran and was recorded before the process ended
    # Nothing left to a lease: each job is done (one attempt) or pending with its attempt handed back.
    assert set(after_exit) <= {("done", 1), ("pending", 0)}, after_exit
    assert sum(after_exit.values()) == 200
    assert sorted(ran(log)) == sorted(set(ran(log))) and len(ran(log)) == after_exit.get(("done", 1), 0)
    asyncio.run(drain(database_url))
    assert by_state(conn) == {("done", 1): 200}
    ids = ran(log)
    assert len(ids) == 200 and len(set(ids)) == 200  # each job ran once, in the exiting process or the drain
