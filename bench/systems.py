"""Each system under test: how it installs, bulk-enqueues N no-op jobs, and drains them in-process."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from crontick import db, enqueue_many
from crontick.settings import Settings
from crontick.settings.variables import DEFAULT_CONCURRENCY, DEFAULT_SCHEMA
from crontick.tick.drain import drain

from .noop import JOB_TYPE, SYNC_JOB_TYPE
from .seen import Seen
from .server import as_url


@dataclass
class System:
    """One row of the table: `enqueue` and `drain` each return the seconds they took."""

    key: str
    name: str
    enqueue_label: str | None  # its row in the enqueue table; None when another system's row covers it
    install: Callable[[str], Awaitable[None]]
    enqueue: Callable[[str, int, Seen], Awaitable[float]]
    drain: Callable[[str, int, Seen], Awaitable[float]]
    tables: str  # the prefix of the tables truncated between runs
    note: str = ""


async def clear(url: str, prefix: str) -> None:
    """Empty the system's tables and refresh statistics, so every run starts alike."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        # crontick's tables live in its own schema (CRONTICK_SCHEMA), the peers' in public.
        cur = await conn.execute(
            "select schemaname, tablename from pg_tables where schemaname in ('public', %(schema)s) and tablename like %(p)s",
            {"p": prefix + "%", "schema": DEFAULT_SCHEMA},
        )
        names = [sql.Identifier(schema, table) for schema, table in await cur.fetchall()]
        if names:
            await conn.execute(sql.SQL("truncate {} restart identity cascade").format(sql.SQL(", ").join(names)))


async def analyze(url: str) -> None:
    """What autovacuum would have done by the time a real backlog is drained."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("analyze")


def timed(func: Callable[[], Any]) -> float:
    began = time.perf_counter()
    func()
    return time.perf_counter() - began


# --- crontick ---------------------------------------------------------------------------------


async def crontick_install(url: str) -> None:
    await db.migrate(url)


async def crontick_enqueue(url: str, jobs: int, seen: Seen, job_type: str = JOB_TYPE) -> float:
    with psycopg.connect(url, autocommit=True) as conn:
        return timed(lambda: enqueue_many(conn, [(job_type, {"i": i}) for i in range(jobs)]))


async def crontick_enqueue_sync(url: str, jobs: int, seen: Seen) -> float:
    """The same jobs for the `def` handler."""
    return await crontick_enqueue(url, jobs, seen, SYNC_JOB_TYPE)


GROUPED_INSERT = """
insert into jobs (type, payload, group_key)
select %(type)s, jsonb_build_object('i', g), 'group:' || (g %% %(groups)s) from generate_series(0, %(n)s - 1) g order by g
"""
BENCH_GROUPS = 1000


async def crontick_enqueue_grouped(url: str, jobs: int, seen: Seen) -> float:
    """Flow control (issue 20): the same no-op jobs spread over BENCH_GROUPS groups, in turn, by plain INSERT."""
    with psycopg.connect(url, autocommit=True) as conn:
        return timed(lambda: conn.execute(GROUPED_INSERT, {"type": JOB_TYPE, "n": jobs, "groups": BENCH_GROUPS}))


def crontick_drain(
    batch_size: int, concurrency: int = DEFAULT_CONCURRENCY
) -> Callable[[str, int, Seen], Awaitable[float]]:
    """The drain of `crontick tick --drain` at CRONTICK_BATCH_SIZE `batch_size` and CRONTICK_CONCURRENCY `concurrency`."""

    async def run(url: str, jobs: int, seen: Seen) -> float:
        conn = await db.connect(url)
        try:
            began = time.perf_counter()
            result = await drain(
                conn, Settings(database_url=url, batch_size=batch_size, concurrency=concurrency), source="bench"
            )
            seconds = time.perf_counter() - began
        finally:
            await conn.close()
        if result.jobs.succeeded != jobs:
            raise RuntimeError(f"crontick drain: expected {jobs} jobs to succeed, got: {result.jobs}")
        return seconds

    return run


# --- procrastinate ----------------------------------------------------------------------------


def _procrastinate_app(url: str, mark: Callable[[int], None]) -> Any:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @app.task(name="noop")
    async def noop(i: int) -> None:
        mark(i)

    return app, noop


async def procrastinate_install(url: str) -> None:
    app, _ = _procrastinate_app(url, lambda i: None)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()


async def procrastinate_enqueue(url: str, jobs: int, seen: Seen) -> float:
    app, noop = _procrastinate_app(url, seen.mark)
    async with app.open_async():
        began = time.perf_counter()
        await noop.batch_defer_async(*({"i": i} for i in range(jobs)))
        return time.perf_counter() - began


async def procrastinate_drain(url: str, jobs: int, seen: Seen) -> float:
    app, _ = _procrastinate_app(url, seen.mark)
    async with app.open_async():
        began = time.perf_counter()
        await app.run_worker_async(concurrency=10, wait=False, install_signal_handlers=False)
        return time.perf_counter() - began


# --- pgqueuer ---------------------------------------------------------------------------------


async def _pgqueuer_driver(url: str, kind: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
    from pgqueuer import AsyncpgDriver, PsycopgDriver

    if kind == "asyncpg":
        import asyncpg

        conn = await asyncpg.connect(as_url(url))
        return AsyncpgDriver(conn), conn.close
    pconn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    return PsycopgDriver(pconn), pconn.close


def pgqueuer_install(kind: str) -> Callable[[str], Awaitable[None]]:
    async def run(url: str) -> None:
        from pgqueuer import Queries

        driver, close = await _pgqueuer_driver(url, kind)
        try:
            await Queries(driver).install()
        finally:
            await close()

    return run


def pgqueuer_enqueue(kind: str) -> Callable[[str, int, Seen], Awaitable[float]]:
    async def run(url: str, jobs: int, seen: Seen) -> float:
        from pgqueuer import Queries

        driver, close = await _pgqueuer_driver(url, kind)
        try:
            began = time.perf_counter()
            await Queries(driver).enqueue(["noop"] * jobs, [str(i).encode() for i in range(jobs)], [0] * jobs)
            return time.perf_counter() - began
        finally:
            await close()

    return run


def pgqueuer_drain(kind: str, batch_size: int) -> Callable[[str, int, Seen], Awaitable[float]]:
    async def run(url: str, jobs: int, seen: Seen) -> float:
        from pgqueuer import Queries, QueueManager
        from pgqueuer.domain.types import QueueExecutionMode

        driver, close = await _pgqueuer_driver(url, kind)
        try:
            qm = QueueManager(Queries(driver))

            @qm.entrypoint("noop")
            async def noop(job: Any) -> None:
                seen.mark(int(job.payload))

            began = time.perf_counter()
            await qm.run(batch_size=batch_size, mode=QueueExecutionMode.drain, dequeue_timeout=timedelta(seconds=1))
            return time.perf_counter() - began
        finally:
            await close()

    return run


# --- plain psycopg reference loops, on crontick's own jobs table ------------------------------

PLAIN_INSERT = (
    "insert into jobs (type, payload) select t, p from unnest(%(types)s::text[], %(payloads)s::jsonb[]) as u(t, p)"
)
PLAIN_CLAIM = """
with due as materialized (
    select id from jobs where status = 'pending' and not held and run_after <= now()
    order by run_after, id limit 100 for update skip locked
)
update jobs j set status = 'running', attempts = j.attempts + 1,
    locked_until = now() + interval '30 seconds', updated_at = now()
where j.id = any(array(select id from due))
returning j.id, j.payload
"""
PLAIN_DONE_ONE = (
    "update jobs set status = 'done', locked_until = null, finished_at = now(), updated_at = now() where id = %(id)s"
)
PLAIN_DONE_MANY = "update jobs set status = 'done', locked_until = null, finished_at = now(), updated_at = now() where id = any(%(ids)s)"


async def plain_enqueue(url: str, jobs: int, seen: Seen) -> float:
    params = {"types": [JOB_TYPE] * jobs, "payloads": [Jsonb({"i": i}) for i in range(jobs)]}
    with psycopg.connect(url, autocommit=True) as conn:
        return timed(lambda: conn.execute(PLAIN_INSERT, params))


def plain_drain(per_job: bool, prepare: bool = True) -> Callable[[str, int, Seen], Awaitable[float]]:
    """Claim 100 with SKIP LOCKED, run them, then one UPDATE per job or one for the batch."""

    def loop(conn: psycopg.Connection[Any], seen: Seen) -> None:
        while rows := conn.execute(PLAIN_CLAIM).fetchall():
            for _, payload in rows:
                seen.mark(payload["i"])
            if per_job:
                for job_id, _ in rows:
                    conn.execute(PLAIN_DONE_ONE, {"id": job_id})
            else:
                conn.execute(PLAIN_DONE_MANY, {"ids": [job_id for job_id, _ in rows]})

    async def run(url: str, jobs: int, seen: Seen) -> float:
        threshold = 5 if prepare else None  # psycopg's default, or none (what a pooler allows)
        with psycopg.connect(url, autocommit=True, prepare_threshold=threshold) as conn:
            return timed(lambda: loop(conn, seen))

    return run


def _version(distribution: str) -> str:
    """A peer's version; bench.limit runs crontick's rows from the runtime venv, where the peers are not installed."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "(not installed)"


def all_systems() -> list[System]:
    procrastinate, pgqueuer = _version("procrastinate"), _version("pgqueuer")
    return [
        System(
            "crontick",
            "crontick: tick loop, batch 100",
            "crontick enqueue_many",
            crontick_install,
            crontick_enqueue,
            crontick_drain(100),
            "jobs",
        ),
        System(
            "crontick_sync",
            "crontick: tick loop, batch 100, sync def handlers",
            None,
            crontick_install,
            crontick_enqueue_sync,
            crontick_drain(100),
            "jobs",
        ),
        System(
            "crontick_batch_1000",
            "crontick: tick loop, batch 1000",
            None,
            crontick_install,
            crontick_enqueue,
            crontick_drain(1000),
            "jobs",
            "CRONTICK_BATCH_SIZE=1000",
        ),
        System(
            "crontick_groups",
            f"crontick: tick loop, batch 100, {BENCH_GROUPS:,} groups",
            None,
            crontick_install,
            crontick_enqueue_grouped,
            crontick_drain(100),
            "jobs",
            "flow control: each group one job at a time",
        ),
        System(
            "procrastinate",
            f"procrastinate {procrastinate}, concurrency 10",
            f"procrastinate {procrastinate} batch_defer_async",
            procrastinate_install,
            procrastinate_enqueue,
            procrastinate_drain,
            "procrastinate_",
        ),
        System(
            "pgqueuer_asyncpg",
            f"pgqueuer {pgqueuer}, asyncpg, batch 100",
            f"pgqueuer {pgqueuer} enqueue, asyncpg",
            pgqueuer_install("asyncpg"),
            pgqueuer_enqueue("asyncpg"),
            pgqueuer_drain("asyncpg", 100),
            "pgqueuer",
        ),
        System(
            "pgqueuer_psycopg",
            f"pgqueuer {pgqueuer}, psycopg, batch 100",
            f"pgqueuer {pgqueuer} enqueue, psycopg",
            pgqueuer_install("psycopg"),
            pgqueuer_enqueue("psycopg"),
            pgqueuer_drain("psycopg", 100),
            "pgqueuer",
        ),
        System(
            "plain_per_job",
            "plain psycopg: claim 100, one UPDATE per job",
            "plain psycopg: INSERT … SELECT unnest(jsonb[])",
            crontick_install,
            plain_enqueue,
            plain_drain(per_job=True),
            "jobs",
        ),
        System(
            "plain_batch",
            "plain psycopg: claim 100, one UPDATE per batch",
            None,
            crontick_install,
            plain_enqueue,
            plain_drain(per_job=False),
            "jobs",
        ),
        System(
            "plain_batch_unprepared",
            "plain psycopg: claim 100, one UPDATE per batch, no prepared statements",
            None,
            crontick_install,
            plain_enqueue,
            plain_drain(per_job=False, prepare=False),
            "jobs",
            "prepare_threshold=None, as behind a transaction pooler",
        ),
    ]
