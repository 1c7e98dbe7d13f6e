"""job.map under kill -9, with real tick processes: an item recorded before the kill is never called again, every item
is recorded once, and the rescued run resumes at the first unrecorded one (the item in flight runs again: the one
re-run no system can avoid)."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest

import crontick
from tests.support.core_jobs import job_row
from tests.support.run_cli import cli_env, spawn
from tests.support.run_cli import crontick as run_crontick
from tests.support.workflow_handlers import MAP_ITEMS, STEP_CALLS_TABLE_SQL

HANDLERS = "tests.support.workflow_handlers"
HANG_AT = 5


def _calls(conn: psycopg.Connection[Any], job_id: int) -> dict[str, int]:
    rows = conn.execute("select step, count(*) from step_calls where job_id = %(id)s group by step", {"id": job_id})
    return dict(rows.fetchall())


def _recorded(conn: psycopg.Connection[Any], job_id: int) -> list[str]:
    rows = conn.execute("select name from job_steps where job_id = %(id)s and name like 'rows[%%'", {"id": job_id})
    return sorted(r[0] for r in rows.fetchall())


@pytest.mark.slow
@pytest.mark.parametrize("concurrency", [1, 3])
def test_a_map_killed_mid_item_records_each_item_once_and_calls_no_recorded_item_again(
    database_url: str, conn: psycopg.Connection[Any], concurrency: int
) -> None:
    conn.execute(STEP_CALLS_TABLE_SQL)
    job_id = crontick.enqueue(conn, "t_wfproc.map", {"hang_at": HANG_AT, "concurrency": concurrency})
    env = cli_env(database_url, CRONTICK_HANDLERS=HANDLERS)
    victim = spawn("tick", env=env)
    # One at a time: items 0-4 recorded, item 5 hangs. Three at once: the other workers run every other item.
    before = HANG_AT if concurrency == 1 else MAP_ITEMS - 1
    deadline = time.monotonic() + 30
    while len(_recorded(conn, job_id)) < before:
        assert time.monotonic() < deadline and victim.poll() is None, f"expected {before} items recorded"
        time.sleep(0.02)
    victim.kill()  # SIGKILL with item 5 in flight
    victim.communicate(timeout=10)
    recorded_before = _recorded(conn, job_id)
    assert f"rows[{HANG_AT}]" not in recorded_before and len(recorded_before) == before
    conn.execute("update jobs set locked_until = now() - interval '1 minute' where status = 'running'")
    result = run_crontick("tick", env=env)
    assert result.returncode == 0, result.stderr
    row = job_row(conn, job_id)
    assert row["status"] == "done", row["last_error"]
    assert _recorded(conn, job_id) == sorted(f"rows[{i}]" for i in range(MAP_ITEMS))  # each once (and all)
    calls = _calls(conn, job_id)
    assert {name: calls[name] for name in recorded_before} == dict.fromkeys(recorded_before, 1)
    assert calls[f"rows[{HANG_AT}]"] == 2  # in flight at the kill: called again, recorded once
    assert sum(calls.values()) == MAP_ITEMS + 1
