"""Real `crontick tick` processes whose host clocks are 5 minutes off (Debian's faketime) run on the
database's clock: no job is claimed before its run_after, and a lease written by a slow-clock host is
not taken for expired by a fast-clock one while its job still runs."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import psycopg
import pytest

from bench import faketime as ft
from crontick import enqueue_many
from tests.support.constants import ROOT
from tests.support.core_jobs import wait_for
from tests.support.run_cli import CRONTICK, cli_env
from tests.support.sidefx_handlers import SIDE_EFFECTS_TABLE_SQL

SKEW_SECONDS = 300


@pytest.fixture(name="faketime")
def faketime_fixture() -> str:
    found = ft.binary()
    if found is None:
        if ft.required():
            pytest.fail(ft.MISSING + f" and {ft.REQUIRE_VARIABLE}=1")
        pytest.skip(ft.MISSING + f" ({ft.REQUIRE_VARIABLE}=1 fails instead)")
    return found


def skewed_tick(faketime: str, offset_seconds: int, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ft.skewed([str(CRONTICK), "tick", *args], offset_seconds, faketime),
        env={**env, **ft.ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def summary_of(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_a_fast_clock_claims_nothing_early_and_a_slow_one_nothing_late(
    database_url: str, conn: psycopg.Connection[Any], faketime: str
) -> None:
    conn.execute(SIDE_EFFECTS_TABLE_SQL)
    env = cli_env(database_url, CRONTICK_HANDLERS="tests.support.sidefx_handlers", CRONTICK_BATCH_SIZE="2")
    due = enqueue_many(conn, [("t_sidefx.record", {"n": n}) for n in range(5)])
    later = enqueue_many(conn, [("t_sidefx.record", {"later": True})])
    conn.execute("update jobs set run_after = now() + interval '2 minutes' where id = %s", (later[0],))

    # A drain 5 minutes ahead: its first tick probes, the next ones claim with job_claim_due (batch 2).
    drained = summary_of(skewed_tick(faketime, SKEW_SECONDS, env, "--drain"))
    assert drained["jobs"]["succeeded"] == 5
    runs = dict(conn.execute("select job_id, count(*) from side_effects group by job_id").fetchall())
    assert runs == dict.fromkeys(due, 1), "the job due in 2 minutes (by the database's clock) ran early"
    status = conn.execute("select status, attempts from jobs where id = %s", (later[0],)).fetchone()
    assert status == ("pending", 0)

    # Now due by the database's clock: a tick 5 minutes behind runs it at once.
    conn.execute("update jobs set run_after = now() where id = %s", (later[0],))
    assert summary_of(skewed_tick(faketime, -SKEW_SECONDS, env))["jobs"]["succeeded"] == 1
    assert conn.execute("select status from jobs where id = %s", (later[0],)).fetchone() == ("done",)


def test_a_slow_clock_lease_is_not_rescued_by_a_fast_clock_while_its_job_runs(
    database_url: str, conn: psycopg.Connection[Any], faketime: str
) -> None:
    conn.execute(SIDE_EFFECTS_TABLE_SQL)
    env = cli_env(
        database_url,
        CRONTICK_HANDLERS="tests.support.sidefx_handlers",
        CRONTICK_TIME_BUDGET_SECONDS="6",
        CRONTICK_LEASE_SECONDS="8",
    )
    (job,) = enqueue_many(conn, [("t_sidefx.slow", {"seconds": 4})])
    conn.execute("update jobs set run_after = now() - interval '10 minutes'")  # due by every host's clock
    slow_host = skewed_tick(faketime, -SKEW_SECONDS, env)
    wait_for(conn, "select count(*) from side_effects", 1, "the slow-clock tick running its job")
    left = conn.execute("select extract(epoch from locked_until - now()) from jobs where id = %s", (job,)).fetchone()
    fast = summary_of(skewed_tick(faketime, SKEW_SECONDS, env))  # while the slow one still runs
    assert fast["jobs"]["rescued"] == 0 and fast["jobs"]["claimed"] == 0, fast
    # The lease is the database's time plus the lease, whatever the claiming host's clock said.
    assert left is not None and 0 < left[0] <= 8, left
    slow = summary_of(slow_host)
    assert slow["jobs"]["succeeded"] == 1 and slow["jobs"]["fenced"] == 0, slow
    assert conn.execute("select count(*) from side_effects").fetchone() == (1,)
    assert conn.execute("select status, attempts from jobs where id = %s", (job,)).fetchone() == ("done", 1)
