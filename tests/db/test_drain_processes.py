"""Four separate `crontick tick --drain` processes share 5,000 jobs and run each exactly once."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from crontick import enqueue_many
from tests.cli.run_cli import cli_env, spawn
from tests.db.core_jobs import wait_for
from tests.db.sidefx_handlers import SIDE_EFFECTS_TABLE_SQL

JOBS = 5000
PROCESSES = 4


def test_four_processes_drain_5000_jobs_each_exactly_once(database_url: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute(SIDE_EFFECTS_TABLE_SQL)
    ids = enqueue_many(conn, [("t_sidefx.record", {"n": n}) for n in range(JOBS)])
    env = cli_env(database_url, CRONTICK_HANDLERS="tests.db.sidefx_handlers")
    with psycopg.connect(database_url) as gate:
        # Hold the drains at their first statement until all four are waiting, so they really race.
        gate.execute("lock table jobs in access exclusive mode")
        procs = [spawn("tick", "--drain", env=env) for _ in range(PROCESSES)]
        waiting = "select count(*) from pg_locks where relation = 'jobs'::regclass and not granted"
        wait_for(conn, waiting, PROCESSES, f"{PROCESSES} drains waiting on the jobs table")
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * PROCESSES, [err for _, err in outputs]
    summaries = [json.loads(out) for out, _ in outputs]

    effects = conn.execute("select job_id, count(*) from side_effects group by job_id").fetchall()
    assert sorted(job_id for job_id, _ in effects) == sorted(ids)
    assert {n for _, n in effects} == {1}, "some job ran more than once"
    statuses = conn.execute("select status, count(*) from jobs group by status").fetchall()
    assert statuses == [("done", JOBS)]
    assert sum(s["jobs"]["succeeded"] for s in summaries) == JOBS
    assert sum(s["jobs"]["fenced"] + s["jobs"]["failed"] for s in summaries) == 0
    pids = conn.execute("select count(distinct pid) from side_effects").fetchone()[0]  # type: ignore[index]
    assert pids == PROCESSES, "every process should have run a share of the jobs"
