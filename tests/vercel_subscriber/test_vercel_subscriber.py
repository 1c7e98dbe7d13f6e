"""crontick.vercel_subscriber, the topic subscriber of CRONTICK_WAKER=vercel-queue, against vercel-queue's embedded
in-process Queue service over real HTTP: a booked wake-up arrives at its instant and runs the app's own tick in
this process (the due job runs, the tick is logged with source vercel-queue); a message that is not crontick's
runs nothing; a tick that cannot run raises, so the queue delivers the message again."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import psycopg
import pytest

import crontick
from crontick import vercel_subscriber
from crontick.errors import ConfigError
from crontick.settings import Settings
from crontick.settings.wakeups import DEFAULT_VERCEL_QUEUE_TOPIC
from crontick.wakers.booking import book_next
from tests.support.vercel_queues import queue_over_http

JOB_TYPE = "vercel_subscriber_test_job"
ran: list[int] = []


@crontick.handler(JOB_TYPE)
async def record(payload: Any, job: crontick.Job) -> None:
    ran.append(job.id)


@pytest.fixture
def fresh_instance(monkeypatch: pytest.MonkeyPatch, database_url: str) -> Any:
    """A cold instance: no Runtime yet, DATABASE_URL set as on the deployment."""
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setattr(vercel_subscriber, "current", None)
    yield
    if vercel_subscriber.current is not None and vercel_subscriber.current.db is not None:
        asyncio.run(vercel_subscriber.current.db.close())


def test_a_booked_wakeup_runs_the_apps_tick_in_the_subscriber(
    database_url: str, conn: psycopg.Connection[Any], fresh_instance: None
) -> None:
    ran.clear()
    assert vercel_subscriber.TOPIC == DEFAULT_VERCEL_QUEUE_TOPIC
    row = conn.execute("select now()").fetchone()
    assert row is not None
    due = row[0] + timedelta(seconds=1.5)
    with conn.transaction():
        job_id = crontick.enqueue(conn, JOB_TYPE, {}, run_after=due)

    async def scenario() -> Any:
        async with queue_over_http() as (_, base_url):
            settings = Settings(database_url=database_url, waker="vercel-queue", vercel_queue_token="local-token",
                                vercel_queue_base_url=base_url)  # fmt: skip
            async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
                outcome = await book_next(aconn, settings, due, row[0])
            deadline = time.monotonic() + 20
            while not ran and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            current = vercel_subscriber.current
            if current is not None and current.db is not None:
                await current.db.close()  # its pool belongs to this loop
            return outcome

    outcome = asyncio.run(scenario())
    assert outcome.status == "booked"
    assert ran == [job_id]
    status, started_at = conn.execute(
        "select status, started_at from crontick.jobs where id = %s", (job_id,)
    ).fetchone()
    assert status == "done" and started_at >= due
    sources = [r[0] for r in conn.execute("select source from crontick.crontick_ticks order by id")]
    assert sources == ["vercel-queue"]


def test_a_message_that_is_not_crontick_runs_nothing(conn: psycopg.Connection[Any], fresh_instance: None) -> None:
    asyncio.run(vercel_subscriber.run_tick({"order": 42}))
    asyncio.run(vercel_subscriber.run_tick("tick"))
    assert vercel_subscriber.current is None  # not even a Runtime built
    assert conn.execute("select count(*) from crontick.crontick_ticks").fetchone() == (0,)


def test_a_tick_that_cannot_run_raises_so_the_queue_delivers_again(
    monkeypatch: pytest.MonkeyPatch, fresh_instance: None
) -> None:
    monkeypatch.delenv("DATABASE_URL")
    with pytest.raises(ConfigError, match="DATABASE_URL"):
        asyncio.run(vercel_subscriber.run_tick({"crontick": "tick", "instant": "2026-12-05T12:00:00+00:00"}))
