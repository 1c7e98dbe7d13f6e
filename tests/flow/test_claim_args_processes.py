"""Flow control across real processes: `crontick tick --drain` processes racing over one queue.

No two jobs of a group overlap and each group starts in enqueue order, across a retry and a
`kill -9`; a rate limit is never exceeded in any window.
"""

from __future__ import annotations

import subprocess
import time
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

from tests.support.core_jobs import wait_for
from tests.support.flow_handlers import FLOW_RUNS_TABLE_SQL, LIMIT_COUNT, LIMIT_SECONDS
from tests.support.run_cli import cli_env, spawn

PROCESSES = 4
LEFT = "select count(*) from jobs where status not in ('done', 'failed', 'cancelled')"


def _enqueue(conn: psycopg.Connection[Any], type: str, rows: list[tuple[str | None, dict[str, Any]]]) -> list[int]:
    """Plain INSERTs (the group column set as any driver would), in list order."""
    ids = []
    for group, payload in rows:
        row = conn.execute(
            "insert into jobs (type, payload, group_key) values (%(t)s, %(p)s, %(g)s) returning id",
            {"t": type, "p": psycopg.types.json.Jsonb({**payload, "group": group}), "g": group},
        ).fetchone()
        assert row is not None
        ids.append(row[0])
    return ids


def _drain_until_done(conn: psycopg.Connection[Any], env: dict[str, str], timeout: float = 90) -> None:
    """Rounds of PROCESSES racing drains until no job is left pending or running (retries come due meanwhile)."""
    deadline = time.monotonic() + timeout
    while conn.execute(LEFT).fetchone() != (0,):
        assert time.monotonic() < deadline, "the queue did not drain"
        procs = [spawn("tick", "--drain", env=env) for _ in range(PROCESSES)]
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
        time.sleep(0.05)


def _runs(conn: psycopg.Connection[Any]) -> dict[str, list[tuple[int, int, datetime, datetime | None]]]:
    runs: dict[str, list[tuple[int, int, datetime, datetime | None]]] = defaultdict(list)
    for grp, job, attempt, started, finished in conn.execute(
        "select grp, job_id, attempt, started_at, finished_at from flow_runs order by started_at"
    ):
        runs[grp].append((job, attempt, started, finished))
    return runs


def _assert_serial_in_order(runs: list[tuple[int, int, datetime, datetime | None]], group: str) -> None:
    for (job, attempt, _, finished), (next_job, next_attempt, started, _) in zip(runs, runs[1:], strict=False):
        assert finished is None or finished <= started, f"group {group}: job {next_job} started while {job} ran"
        assert next_job >= job, f"group {group}: job {next_job} started after {job}, out of enqueue order"
        assert next_job > job or next_attempt > attempt


@pytest.mark.slow
def test_racing_drains_run_each_group_one_at_a_time_in_enqueue_order_across_retries(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(FLOW_RUNS_TABLE_SQL)
    rows: list[tuple[str | None, dict[str, Any]]] = []
    for n in range(12):
        for g in range(30):  # interleaved, so each batch holds jobs of many groups
            rows.append((f"conv:{g}", {"fail_first": n == 3 and g % 3 == 0}))
    rows += [(None, {}) for _ in range(60)]
    ids = _enqueue(conn, "t_flow.step", rows)
    ids += _enqueue(conn, "t_flow.wide", [(f"wide:{g}", {}) for _ in range(9) for g in range(4)])
    env = cli_env(database_url, CRONTICK_HANDLERS="tests.support.flow_handlers", CRONTICK_BATCH_SIZE="20")
    _drain_until_done(conn, env)

    assert conn.execute("select status, count(*) from jobs group by 1").fetchall() == [("done", len(ids))]
    runs = _runs(conn)
    for group, group_runs in runs.items():
        if group is not None and group.startswith("wide:"):  # group_concurrency=3: never a fourth at once
            for _, _, started, _ in group_runs:
                at_once = sum(1 for _, _, s, f in group_runs if s <= started and (f is None or f > started))
                assert at_once <= 3, f"group {group}: {at_once} jobs ran at once"
        elif group is not None:
            _assert_serial_in_order(group_runs, group)
            assert [j for j, a, _, _ in group_runs if a == 1] == sorted(j for j, a, _, _ in group_runs if a == 1)
    retried = conn.execute("select count(*) from flow_runs where attempt = 2").fetchone()
    assert retried == (10,)  # every failed first attempt ran again, and held its group meanwhile
    pids = conn.execute("select count(distinct pid) from flow_runs").fetchone()
    assert pids is not None and pids[0] > 1, "the drains should have shared the work"


@pytest.mark.slow
def test_a_group_whose_running_head_was_killed_waits_for_its_rescue_and_keeps_its_order(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(FLOW_RUNS_TABLE_SQL)
    head, *rest = _enqueue(conn, "t_flow.step", [("g", {"hang_first": True}), ("g", {}), ("g", {})])
    env = cli_env(database_url, CRONTICK_HANDLERS="tests.support.flow_handlers")
    victim = spawn("tick", "--drain", env=env)
    wait_for(conn, "select count(*) from flow_runs", 1, "the head to start")
    victim.kill()  # kill -9 while the head runs: its lease holds the group
    victim.communicate(timeout=10)
    others = [spawn("tick", "--drain", env=env) for _ in range(PROCESSES)]
    for p in others:
        assert p.wait(timeout=60) == 0
    assert conn.execute("select count(*) from flow_runs").fetchone() == (1,)  # nothing else started
    conn.execute("update jobs set locked_until = now() - interval '1 second' where status = 'running'")
    _drain_until_done(conn, env)
    order = [job for job, _, _, _ in _runs(conn)["g"]]
    assert order == [head, head, *rest]  # the rescued head ran again first, then the rest in order


@pytest.mark.slow
def test_racing_drains_never_start_more_than_the_limit_in_any_window(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(FLOW_RUNS_TABLE_SQL)
    limited = _enqueue(conn, "t_flow.limited", [(None, {}) for _ in range(4 * LIMIT_COUNT)])
    free = _enqueue(conn, "t_flow.step", [(None, {}) for _ in range(40)])
    env = cli_env(database_url, CRONTICK_HANDLERS="tests.support.flow_handlers")
    procs: list[subprocess.Popen[str]] = [spawn("tick", "--drain", env=env) for _ in range(PROCESSES)]
    for p in procs:
        assert p.wait(timeout=60) == 0
    # The first round: the limit's share started, and the throttled limit did not hold back the rest.
    assert conn.execute("select count(*) from flow_runs where job_id = any(%(f)s)", {"f": free}).fetchone() == (40,)
    _drain_until_done(conn, env, timeout=60)
    ran = conn.execute("select count(distinct job_id) from flow_runs where job_id = any(%(l)s)", {"l": limited})
    assert ran.fetchone() == (len(limited),)
    # A start is a claim (CONTRACT.md): each job's started_at is its claim's time, the instant the limit
    # counted. (The handlers' own start times lag their claims by however busy the machine is, so a window
    # of them can hold two batches' worth.)
    starts = [
        r[0] for r in conn.execute("select started_at from jobs where id = any(%(l)s) order by 1", {"l": limited})
    ]
    assert len(starts) == len(limited)
    window = timedelta(seconds=LIMIT_SECONDS)
    for i, t in enumerate(starts):
        within = sum(1 for s in starts[i:] if s < t + window)
        assert within <= LIMIT_COUNT, f"{within} starts within {window} from {t}"
    assert starts[-1] - starts[0] >= timedelta(seconds=LIMIT_SECONDS * 3 - 0.2)
