"""Job types (t_core.*) and helpers for the tests that tick the queue; importing it registers the types."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

import crontick
from crontick import db
from crontick.settings import Settings
from crontick.tick.claim import claim_due, rescue_expired
from crontick.tick.pipeline import TickResult, run_tick
from tests.support.constants import TEST_SECRET

_ran: list[int] = []  # ids of the jobs the `t_core.ok` handlers ran, in this process


@pytest.fixture(name="ran")
def ran_fixture() -> list[int]:
    """The ids of the jobs the `t_core.ok` handlers run during this test (ids repeat across test databases)."""
    _ran.clear()
    return _ran


@crontick.handler("t_core.ok")
async def ok(payload: Any, job: crontick.Job) -> None:
    _ran.append(job.id)


@crontick.handler("t_core.ok_sync")
def ok_sync(payload: Any, job: crontick.Job) -> None:
    _ran.append(job.id)


@crontick.handler("t_core.fail")
def fail(payload: Any, job: crontick.Job) -> None:
    raise ValueError(f"boom on attempt {job.attempt}")


@crontick.handler("t_core.exits")
def exits(payload: Any, job: crontick.Job) -> None:
    sys.exit("a library called sys.exit() inside the handler")


@crontick.handler("t_core.permanent")
async def permanent(payload: Any, job: crontick.Job) -> None:
    raise crontick.PermanentError("expected a user that exists, got: user 7 was deleted")


@crontick.handler("t_core.leaks_secret")
async def leaks_secret(payload: Any, job: crontick.Job) -> None:
    raise RuntimeError(f"upstream rejected Authorization: Bearer {TEST_SECRET}")


@crontick.handler("t_core.slow")
async def slow(payload: Any, job: crontick.Job) -> None:
    await asyncio.sleep(30)


@crontick.handler("t_core.exponential", retry=crontick.Exponential(base_seconds=5, cap_seconds=300))
async def exponential(payload: Any, job: crontick.Job) -> None:
    raise ConnectionError("provider down")


def settings_for(url: str, **changes: Any) -> Settings:
    return Settings(database_url=url, cron_secret=TEST_SECRET, **changes)


def tick(
    url: str,
    settings: Settings | None = None,
    *,
    now: datetime | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> TickResult:
    """Run one real tick against `url` on its own connection, as the endpoint would."""

    async def go() -> TickResult:
        conn = await db.connect(url)
        try:
            return await run_tick(conn, settings or settings_for(url), now=now, source="test", clock=clock)
        finally:
            await conn.close()

    return asyncio.run(go())


def job_row(conn: psycopg.Connection[Any], job_id: int) -> dict[str, Any]:
    row = conn.cursor(row_factory=dict_row).execute("select * from jobs where id = %(id)s", {"id": job_id}).fetchone()
    assert row is not None, f"job {job_id} is gone"
    return row


@crontick.handler("t_core.taken_over")
async def taken_over(payload: Any, job: crontick.Job) -> None:
    """Plays a second tick that rescues and re-claims this job while its first attempt still runs."""
    now = datetime.now(UTC)
    other = await db.connect(payload["url"])
    try:
        await other.execute(
            "update jobs set locked_until = %(t)s where id = %(id)s", {"t": now - timedelta(minutes=1), "id": job.id}
        )
        await rescue_expired(other, now)
        reclaimed = await claim_due(other, now, 10, 60)
        assert [j.id for j in reclaimed] == [job.id]
    finally:
        await other.close()


def db_now(conn: psycopg.Connection[Any]) -> datetime:
    """A tick time just after the database's now(), so jobs enqueued with the default run_after are due."""
    value: datetime = conn.execute("select now() + interval '1 second'").fetchone()[0]  # type: ignore[index]
    return value


def wait_for(conn: psycopg.Connection[Any], sql: str, expected: Any, what: str, timeout_seconds: float = 30) -> None:
    """Poll `sql` until its single value equals `expected` (e.g. until N sessions wait on a lock)."""
    deadline = time.monotonic() + timeout_seconds
    while conn.execute(sql).fetchone()[0] != expected:  # type: ignore[index]
        assert time.monotonic() < deadline, f"expected {what}"
        time.sleep(0.02)
