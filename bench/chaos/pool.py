"""Chaos scenario 5 through the pooler: PgBouncer's pool is full (every server connection held in an open transaction)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import psycopg

from bench import server as pg
from crontick.db.cutoff import cutoff_of
from crontick.settings import Settings
from tests.support import pgbouncer

from . import bouncer
from .drain import TICK, counts, drain_all, seed
from .rig import Rig, clear_503, timed
from .scenario import Row, Sizes

POOL_SIZE = 2  # PgBouncer's default_pool_size here: both server connections are held
BUDGET_SECONDS = 2.0
LEASE_SECONDS = 4.0
LIMIT = cutoff_of(Settings(time_budget_seconds=BUDGET_SECONDS, lease_seconds=LEASE_SECONDS))
ANSWER_BY_SECONDS = LIMIT.stop_seconds + 1.0  # plus the time a 503 takes to go out on a loaded machine
TICKS_AT_ONCE = 5
NAME = "5 pool full, PgBouncer"
HANG_SECONDS = ANSWER_BY_SECONDS + 30  # no answer by then: a hang (PgBouncer waits 120 s for a free server)


def connections_pgbouncer(rig: Rig, sizes: Sizes) -> Row:
    """Hold every server connection of a small PgBouncer pool in an open transaction, tick (several at
    once) and ask for health; each must be a prompt 503 with Retry-After. Then release, and drain."""
    binary = pgbouncer.binary()
    if binary is None:
        return bouncer.not_run(NAME)
    rig.reset()
    jobs = max(10, sizes.jobs // 20)
    seed(rig, jobs, 0)
    env = {"CRONTICK_TIME_BUDGET_SECONDS": str(BUDGET_SECONDS), "CRONTICK_LEASE_SECONDS": str(LEASE_SECONDS)}
    with ExitStack() as stack:
        pooled = stack.enter_context(pgbouncer.running(binary, rig.admin, pool_size=POOL_SIZE)).route(rig.url)
        env["DATABASE_URL"] = pg.as_url(pooled)
        server = stack.enter_context(rig.serve(env))
        holders = []
        try:
            for _ in range(POOL_SIZE):  # a transaction keeps its server connection in transaction mode
                holder = psycopg.connect(pooled, prepare_threshold=None)
                holder.execute("select 1")
                holders.append(holder)
            with ThreadPoolExecutor(TICKS_AT_ONCE) as pool:
                ticks = list(pool.map(lambda _: timed("POST", server.base + TICK, HANG_SECONDS), range(TICKS_AT_ONCE)))
            health = timed("GET", server.base + "/api/health", HANG_SECONDS)
        finally:
            for holder in holders:
                holder.close()
        back = timed("POST", server.base + TICK, HANG_SECONDS)
        # PgBouncer may still hand a cut-off tick's claim, read before the cut, to the first free
        # server: those jobs stay `running` until their lease ends, then a tick rescues them.
        time.sleep(LEASE_SECONDS + 0.5)
        drain_all(rig, server.base, 2, sizes.deadline_seconds)
        internal = sum(1 for line in server.log_lines() if '"event": "internal_error"' in line)
    lost, twice, _, _ = counts(rig, jobs, 0)
    rescued = rig.sql("select count(*) from jobs where attempts > 1")[0][0]
    clear = sum(1 for a in ticks if clear_503(a, ANSWER_BY_SECONDS))
    worst = max(a[3] for a in [*ticks, health])
    ok = (
        clear == len(ticks)
        and clear_503(health, ANSWER_BY_SECONDS)
        and back[0] == 200
        and not (lost or twice or internal)
    )
    return Row(
        NAME,
        f"PgBouncer (transaction mode, default_pool_size {POOL_SIZE}, default query_wait_timeout 120 s) with "
        f"every server connection held, {TICKS_AT_ONCE} ticks at once, then released; {jobs} jobs",
        f"{clear}/{len(ticks)} ticks got 503 database_unavailable + Retry-After, health {health[0]}, worst "
        f"{worst:.2f} s (budget {BUDGET_SECONDS:.0f} s, cut-off {LIMIT.seconds:.2f} s); after release: {back[0]}, "
        f"{jobs - lost - twice} jobs ran once, {twice} again, {rescued} rescued after a lease (claimed by a cut-off "
        f"tick's statement that PgBouncer ran after the release); internal errors {internal}",
        lost=lost,
        duplicated=twice,
        ok=ok,
    )
