"""`crontick migrate` applies each migration once, also when two processes run it at the same moment."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from crontick import db
from tests.support.core_jobs import wait_for
from tests.support.databases import fresh_database
from tests.support.run_cli import cli_env, spawn


@pytest.fixture
def empty_database(admin_url: str) -> Iterator[str]:
    with fresh_database(admin_url, "template0") as url:
        yield url


def _versions(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("select version from crontick_migrations order by version").fetchall()]


def test_two_processes_migrating_at_once_apply_each_migration_once(empty_database: str) -> None:
    expected = [version for version, _ in db.migration_files()]
    env = cli_env(empty_database)
    with psycopg.connect(empty_database) as holder:
        # Hold the migration lock until both processes are queued on it, so they truly overlap.
        holder.execute("select pg_advisory_xact_lock(%(k)s)", {"k": db.MIGRATION_LOCK_KEY})
        procs = [spawn("migrate", env=env) for _ in range(2)]
        waiting = "select count(*) from pg_locks where locktype = 'advisory' and not granted"
        wait_for(holder, waiting, 2, "both migrations to wait on the advisory lock")
        holder.commit()
    outputs = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
    assert [p.returncode for p in procs] == [0, 0]
    assert outputs == sorted([f"applied: {', '.join(expected)}", "up to date"])
    assert _versions(empty_database) == expected


def test_migrate_twice_in_one_process_is_a_no_op(empty_database: str) -> None:
    async def both() -> list[list[str]]:
        return list(await asyncio.gather(db.migrate(empty_database), db.migrate(empty_database)))

    applied = asyncio.run(both())
    assert sorted(applied, key=len) == [[], [v for v, _ in db.migration_files()]]
    assert asyncio.run(db.migrate(empty_database)) == []


def test_migrated_database_has_the_contract_columns(database_url: str, conn: psycopg.Connection[Any]) -> None:
    columns = {
        r[0]
        for r in conn.execute("select column_name from information_schema.columns where table_name = 'jobs'").fetchall()
    }
    assert {
        "id",
        "type",
        "payload",
        "status",
        "attempts",
        "max_attempts",
        "run_after",
        "last_error",
        "created_at",
        "updated_at",
    } <= columns
