"""Clocks minutes apart (issue 35): a provider whose clock runs ahead of the database's delivers a wake-up before
its instant by the database's clock. The tick it starts finds the work not yet due and that instant spent (served);
book_next then books again, later by the lead the early delivery measured, so the work starts on time instead of
waiting for the safety net. Over real HTTP, with the QStash stand-in's clock ahead of the real one."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg

from crontick.wakers.booking import book_next
from tests.support import noop_jobs
from tests.support.credentials import QSTASH_CURRENT
from tests.support.http_checks import AUTH, TICK
from tests.support.qstash_server import qstash_stand_in
from tests.support.waking import TOKEN, settings_for, waking_app

AHEAD_SECONDS = 2.0


def test_an_early_delivery_books_again_by_the_providers_clock(database_url: str, conn: psycopg.Connection[Any]) -> None:
    # A budget shorter than the lead: the early tick cannot wait for the job in-process.
    with waking_app(database_url, time_budget_seconds=0.5) as (url, stand_in):
        stand_in.clock_ahead_seconds = AHEAD_SECONDS
        (job, due) = conn.execute(
            "insert into jobs (type, payload, run_after) values (%s, '{}', now() + interval '4 seconds')"
            " returning id, run_after",
            (noop_jobs.NOOP,),
        ).fetchone()
        first = httpx.post(url + TICK, headers=AUTH, timeout=30).json()
        assert first["wakeups"]["booked"] == 1
        deliveries = stand_in.wait_delivered(2, timeout=30)
        deadline = time.monotonic() + 10
        while conn.execute("select status from jobs where id = %s", (job,)).fetchone() != ("done",):
            assert time.monotonic() < deadline, "the job waited for the safety net"
            time.sleep(0.05)
    early, on_time = deliveries[:2]
    assert early.delivered_at is not None and early.delivered_at < due.timestamp()  # came before the job was due
    booked = [int(p["headers"]["upstash-not-before"]) for p in stand_in.published]
    assert len(booked) == 2 and booked[1] >= booked[0] + AHEAD_SECONDS - 1  # by the stand-in's clock
    assert on_time.delivered_at is not None and on_time.delivered_at >= due.timestamp()
    instants = conn.execute(
        "select instant, served_at is not null from crontick.crontick_wakeups order by 1"
    ).fetchall()
    assert [(i.timestamp(), s) for i, s in instants] == [(float(booked[0]), True), (float(booked[1]), True)]


def test_a_delivery_on_time_books_what_comes_next_unshifted(database_url: str) -> None:
    """Only an early delivery moves the next instant: one that arrives on time (or late) books work as it is due, and
    one that came more than EARLY_LEAD_MAX early (a forged or far-off instant) is not followed."""
    now = datetime.now(UTC).replace(microsecond=0)
    with qstash_stand_in(TOKEN, QSTASH_CURRENT) as stand_in:
        settings = settings_for(database_url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                                public_url="http://127.0.0.1:9")  # fmt: skip

        async def book(delivered: datetime) -> Any:
            async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
                return await book_next(aconn, settings, now + timedelta(minutes=10), now, delivered=delivered)

        late = asyncio.run(book(now - timedelta(seconds=30)))
        early = asyncio.run(book(now + timedelta(seconds=90)))
        far_off = asyncio.run(book(now + timedelta(hours=2)))  # a clock to fix, not to follow
    assert late.instant == now + timedelta(minutes=10)
    assert early.instant == now + timedelta(minutes=11, seconds=30)
    assert far_off.instant == now + timedelta(minutes=10)
