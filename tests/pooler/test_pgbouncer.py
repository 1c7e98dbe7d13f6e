"""crontick through a real PgBouncer in transaction mode: migrate, enqueue, ticks, concurrent ticks, the app."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick import db
from crontick.settings import Settings
from crontick.tick.pipeline import TickResult, run_tick
from tests.support.constants import TEST_SECRET
from tests.support.databases import fresh_database
from tests.support.pgbouncer import PgBouncer

runs: Counter[int] = Counter()


@crontick.handler("t_pooler.count")
async def count(payload: Any, job: crontick.Job) -> None:
    runs[payload["n"]] += 1


def settings_for(url: str, **changes: Any) -> Settings:
    return Settings(database_url=url, cron_secret=TEST_SECRET, **changes)


async def ticks_at_once(url: str, settings: Settings, count: int) -> list[TickResult]:
    """`count` ticks, each on its own connection through the pooler, started together."""
    conns = [await db.connect(url) for _ in range(count)]
    try:
        return list(await asyncio.gather(*(run_tick(c, settings, source="test") for c in conns)))
    finally:
        for c in conns:
            await c.close()


def test_the_pooler_is_pgbouncer_in_transaction_mode(pgbouncer: PgBouncer, admin_url: str) -> None:
    # PgBouncer's admin console answers SHOW CONFIG; PostgreSQL itself would reject the statement.
    with psycopg.connect(
        pgbouncer.route(admin_url), dbname="pgbouncer", autocommit=True, prepare_threshold=None
    ) as admin:
        config = {row[0]: row[1] for row in admin.execute("show config").fetchall()}
    assert config["pool_mode"] == "transaction"
    assert config["listen_port"] == str(pgbouncer.port)


def test_two_migrations_at_once_through_the_pooler_apply_each_version_once(
    pgbouncer: PgBouncer, admin_url: str
) -> None:
    with fresh_database(admin_url, "template0") as direct:
        pooled = pgbouncer.route(direct)

        async def both() -> list[list[str]]:
            return list(await asyncio.gather(db.migrate(pooled), db.migrate(pooled)))

        first, second = asyncio.run(both())
        versions = [v for v, _ in db.migration_files()]
        # The advisory lock is transaction-scoped, so the pooler may hand each migration any server connection.
        assert sorted(first + second) == versions and not (first and second)
        with psycopg.connect(direct) as conn:
            recorded = [r[0] for r in conn.execute("select version from crontick_migrations order by version")]
        assert recorded == versions


def test_enqueue_in_the_callers_transaction_then_a_tick_runs_it(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    runs.clear()
    with psycopg.connect(database_url) as app_conn, app_conn.transaction():
        job_id = crontick.enqueue(app_conn, "t_pooler.count", {"n": 1}, key="pooler:1")
        again = crontick.enqueue(app_conn, "t_pooler.count", {"n": 1}, key="pooler:1")
    ids = crontick.enqueue_many(conn, [("t_pooler.count", {"n": n}) for n in range(2, 52)])
    assert again == job_id and len(ids) == 50
    result = asyncio.run(ticks_at_once(database_url, settings_for(database_url), 1))[0]
    assert (result.jobs.claimed, result.jobs.succeeded, result.more) == (51, 51, False)
    assert runs == Counter(range(1, 52))
    assert conn.execute("select count(*) from jobs where status = 'done'").fetchone() == (51,)


def test_two_ticks_at_once_through_the_pooler_run_each_job_once(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    runs.clear()
    crontick.enqueue_many(conn, [("t_pooler.count", {"n": n}) for n in range(300)])
    settings = settings_for(database_url, batch_size=100)
    first = asyncio.run(ticks_at_once(database_url, settings, 2))
    assert [r.jobs.claimed for r in first] == [100, 100] and all(r.more for r in first)
    while (results := asyncio.run(ticks_at_once(database_url, settings, 2))) and any(r.jobs.claimed for r in results):
        pass
    assert runs == Counter(range(300)), "a job ran twice or never"
    assert conn.execute("select status, count(*) from jobs group by status").fetchall() == [("done", 300)]


def test_the_app_over_http_ticks_through_the_pooler(
    database_url: str, conn: psycopg.Connection[Any], live_app: Any
) -> None:
    runs.clear()
    crontick.enqueue_many(conn, [("t_pooler.count", {"n": n}) for n in range(20)])
    with live_app(settings_for(database_url)) as base:
        auth = {"Authorization": f"Bearer {TEST_SECRET}"}
        ticks = [httpx.post(f"{base}/api/cron/tick", headers=auth, timeout=30) for _ in range(3)]
        health = httpx.get(f"{base}/api/health", timeout=30)
    assert [t.status_code for t in ticks] == [200, 200, 200]
    assert [t.json()["jobs"]["succeeded"] for t in ticks] == [20, 0, 0]
    assert health.status_code == 200 and health.json()["ok"] is True and health.json()["last_tick_at"]
    assert runs == Counter(range(20))


def test_session_state_would_break_here(database_url: str) -> None:
    """The control: what crontick avoids does fail behind this pooler, so the passes above mean something."""
    with psycopg.connect(database_url, autocommit=True) as a, psycopg.connect(database_url, autocommit=True) as b:
        # Two open clients, one PostgreSQL backend: each transaction borrows a server connection,
        # and PgBouncer hands back the one just released.
        pid_a = a.execute("select pg_backend_pid()").fetchone()
        pid_b = b.execute("select pg_backend_pid()").fetchone()
        assert pid_a == pid_b
    with psycopg.connect(database_url, autocommit=True, prepare_threshold=0) as a, psycopg.connect(database_url) as b:
        a.execute("select %(n)s::int", {"n": 1})  # prepared by name on the backend it borrowed
        b.execute("select 1")  # b's open transaction now holds that backend
        with pytest.raises(psycopg.errors.InvalidSqlStatementName):
            a.execute("select %(n)s::int", {"n": 2})  # another backend, which never saw the PREPARE
        b.rollback()
