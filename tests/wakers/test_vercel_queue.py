"""CRONTICK_WAKER=vercel-queue against vercel-queue's embedded in-process Queue service, served over real HTTP on
the test's event loop: the message arrives at its subscriber after its delay and no sooner, a repeat of the same
instant is never delivered twice, no deployment pinning is sent, and the subscriber runs a tick in-process."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import vercel.queue as vq
from vercel.queue._internal.embedded import DEFAULT_DEPLOYMENT_PARTITION

from crontick.runtime import Runtime
from crontick.settings import Settings
from crontick.wakers.booking import book_next
from crontick.wakers.delivery import delivered_instant
from tests.support.vercel_queues import queue_over_http

TOPIC = "crontick-tick-test"
arrivals: list[tuple[float, dict[str, Any]]] = []
runtimes: list[Runtime] = []


@vq.subscribe(topic=TOPIC)
async def run_tick(payload: dict[str, Any]) -> None:
    """What an app's subscriber does (docs/wakeups.md): run a tick in-process with the message's instant (here with
    the test's settings)."""
    arrivals.append((time.time(), payload))
    if runtimes:
        await runtimes[0].run(source="vercel-queue", delivered=delivered_instant(payload))


def _settings(database_url: str, base_url: str) -> Settings:
    return Settings(database_url=database_url, waker="vercel-queue", vercel_queue_topic=TOPIC,
                    vercel_queue_token="local-token", vercel_queue_base_url=base_url)  # fmt: skip


def test_the_message_arrives_after_its_delay_and_runs_a_tick(database_url: str, conn: psycopg.Connection[Any]) -> None:
    arrivals.clear()

    async def scenario() -> tuple[Any, Any, list[Any]]:
        async with queue_over_http() as (service, base_url):
            settings = _settings(database_url, base_url)
            runtimes[:] = [Runtime(settings)]
            async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
                now = datetime.now(UTC)
                first = await book_next(aconn, settings, now + timedelta(seconds=2), now)
                conn.execute("delete from crontick.crontick_wakeups")  # crontick's record lost: the key decides
                again = await book_next(aconn, settings, now + timedelta(seconds=2), now)
            deadline = time.monotonic() + 20
            while not arrivals and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.5)  # a second delivery would have come by now
            messages = list(service.server.state.messages)
            await runtimes[0].close()
            return first, again, messages

    first, again, messages = asyncio.run(scenario())
    assert first.status == "booked" and again.status == "booked"
    assert len(arrivals) == 1, arrivals
    arrived_at, payload = arrivals[0]
    assert payload == {"crontick": "tick", "instant": first.instant.isoformat()}
    assert first.instant.timestamp() <= arrived_at < first.instant.timestamp() + 3
    assert [m.deployment for m in messages] == [DEFAULT_DEPLOYMENT_PARTITION] * 2  # no Vqs-Deployment-Id: not pinned
    assert conn.execute("select source from crontick.crontick_ticks order by id desc limit 1").fetchone() == (
        "vercel-queue",
    )
    # The subscriber passed the instant on: the tick recorded it served, so a repeat would be a duplicate.
    assert conn.execute("select served_at is not null from crontick.crontick_wakeups").fetchone() == (True,)


def test_the_delay_counts_from_the_databases_clock(database_url: str) -> None:
    """An app host whose clock is ten minutes off books the same delay: only the database's `now` counts."""
    arrivals.clear()
    runtimes.clear()

    async def scenario() -> tuple[Any, float]:
        async with queue_over_http() as (_, base_url):
            settings = _settings(database_url, base_url)
            database_now = datetime.now(UTC) - timedelta(minutes=10)  # what the database says; this host differs
            async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
                booked_at = time.time()
                outcome = await book_next(aconn, settings, database_now + timedelta(seconds=2), database_now)
            deadline = time.monotonic() + 20
            while not arrivals and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return outcome, booked_at

    outcome, booked_at = asyncio.run(scenario())
    assert outcome.status == "booked" and len(arrivals) == 1
    assert 1.5 <= arrivals[0][0] - booked_at < 4.5
