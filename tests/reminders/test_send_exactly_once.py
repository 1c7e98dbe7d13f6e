"""Exactly once under concurrency and crashes: 8 ticking processes at once, and a tick killed with SIGKILL mid-send."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections import Counter
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from werkzeug import Response

from crontick import db
from crontick.reminders import send
from crontick.tick.pipeline import run_tick
from tests.support.core_jobs import wait_for
from tests.support.reminders import (
    NOW,
    Provider,
    Received,
    add_due,
    ok,
    sends,
    settings_for,
    settings_values,
    tick,
    unsent,
)
from tests.support.tick_worker import RACE_TIME_BUDGET_SECONDS, Workers

PROCESS_TIMEOUT_SECONDS = 60


@pytest.mark.slow
@pytest.mark.serial  # eight draining processes: beside two xdist workers on 2 cores, round 3 once sent 480 of 500
@pytest.mark.parametrize("round_", [1, 2, 3])
def test_eight_processes_ticking_at_once_send_each_of_500_reminders_exactly_once(
    round_: int, database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    ids = add_due(conn, 500)
    values = settings_values(
        database_url, provider.url, "email", batch_size=40, concurrency=8, time_budget_seconds=RACE_TIME_BUDGET_SECONDS
    )
    results = Workers(8, values, NOW, "drain").finish(sent=500, unsent=lambda: unsent(conn, ids))

    keys = provider.keys()
    assert len(keys) == 500  # exactly 500 provider requests, not one more
    assert Counter(keys) == Counter(f"reminder:{i}:24h" for i in ids)
    rows = sends(conn)
    assert len(rows) == 500 and {r["status"] for r in rows} == {"sent"} and {r["attempts"] for r in rows} == {1}
    assert sum(1 for r in results if r.sent > 0) >= 2, (
        f"expected the work to be shared, got {[r.sent for r in results]}"
    )


def test_a_claim_that_loses_the_race_for_fresh_reminders_says_more_are_due(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    """The race above, one step at a time: a second claim picks the same fresh reminders as a first
    one still in its transaction, waits on its inserts, and gets none once it commits. It says it
    lost, so its tick answers `more` and a draining tick goes on to the rest instead of stopping."""
    ids = add_due(conn, 3)
    settings = settings_for(database_url, provider, "email", batch_size=2)
    waiting = "select count(*) from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()"

    async def race() -> tuple[list[send.Claimed], bool, list[send.Claimed], bool, list[send.Claimed], bool]:
        first, second = await db.connect(database_url), await db.connect(database_url)
        try:
            async with first.transaction():
                won, first_lost = await send.claim(first, settings, NOW)
                losing = asyncio.create_task(send.claim(second, settings, NOW))
                await asyncio.to_thread(wait_for, conn, waiting, 1, "the second claim to wait on the first's inserts")
            lost, second_lost = await losing
            rest, rest_lost = await send.claim(second, settings, NOW)
        finally:
            await first.close()
            await second.close()
        return won, first_lost, lost, second_lost, rest, rest_lost

    won, first_lost, lost, second_lost, rest, rest_lost = asyncio.run(race())
    assert [c.booking_id for c in won] == ids[:2] and not first_lost
    assert lost == [] and second_lost  # nothing claimed, and it knows the due reminders were taken
    assert [c.booking_id for c in rest] == ids[2:] and not rest_lost
    assert len(sends(conn)) == 3


class Blocker:
    """Provider behaviour: answer the first `free` requests, then hold every later one until released."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.released = threading.Event()
        self.held = threading.Event()

    def __call__(self, received: Received, n: int) -> Response:
        if n > self.free:
            self.held.set()
            self.released.wait(30)
        return ok(received, n)


def kill_mid_send(database_url: str, provider: Provider, channel: str) -> int:
    """Run one tick in a worker process, SIGKILL it while the provider holds its 4th request."""
    blocker = Blocker(free=3)
    provider.behave = blocker
    values = settings_values(database_url, provider.url, channel, batch_size=8, concurrency=1)
    [proc] = Workers(1, values, NOW, "once").procs
    try:
        assert blocker.held.wait(PROCESS_TIMEOUT_SECONDS), "the worker never reached its 4th send"
        assert proc.pid is not None
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(PROCESS_TIMEOUT_SECONDS)
    finally:
        blocker.released.set()
    assert proc.exitcode == -signal.SIGKILL
    return len(provider.requests)


def test_sigkill_mid_send_then_more_ticks_never_sends_an_email_twice(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    ids = add_due(conn, 12)
    requests_before = kill_mid_send(database_url, provider, "email")
    assert requests_before == 4
    rows = sends(conn)
    assert len(rows) == 8 and {r["status"] for r in rows} == {"sending"}  # the dead tick's claim

    provider.behave = ok
    settings = settings_for(database_url, provider, "email")
    before_lease = tick(database_url, settings, NOW + timedelta(seconds=10))
    assert before_lease.reminders.sent == 4  # the 4 bookings the dead tick never claimed; its rows wait for the lease
    after_lease = NOW + timedelta(seconds=settings.lease_seconds + 1)
    for n in range(3):
        tick(database_url, settings, after_lease + timedelta(minutes=n))

    rows = sends(conn)
    assert [r["status"] for r in rows] == ["sent"] * 12
    by_key: dict[str, list[Received]] = {}
    for r in provider.requests:
        by_key.setdefault(r.key, []).append(r)
    assert set(by_key) == {f"reminder:{i}:24h" for i in ids}
    # Resent only under the same Idempotency-Key with the same body, which the provider delivers once.
    for key, requests in by_key.items():
        assert len({r.body for r in requests}) == 1, key
    assert sorted(len(v) for v in by_key.values()) == [1] * 8 + [2] * 4
    dead_batch = {f"reminder:{i}:24h" for i in ids[:8]}
    assert {r["idempotency_key"] for r in rows if r["attempts"] == 2} == dead_batch  # retried after the lease
    assert {k for k, v in by_key.items() if len(v) == 2} <= dead_batch


def test_sigkill_mid_send_then_more_ticks_leaves_sms_unknown_and_never_resends(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    add_due(conn, 12, phone=True)
    assert kill_mid_send(database_url, provider, "sms") == 4

    provider.behave = ok
    settings = settings_for(database_url, provider, "sms")
    after_lease = NOW + timedelta(seconds=settings.lease_seconds + 1)
    for n in range(3):
        tick(database_url, settings, after_lease + timedelta(minutes=n * 40))

    recipients = Counter(r.form["To"] for r in provider.requests)
    assert len(provider.requests) == 4 + 4 and max(recipients.values()) == 1  # nobody got two texts
    rows = sends(conn)
    assert Counter(r["status"] for r in rows) == {"unknown": 8, "sent": 4}
    for r in rows:
        if r["status"] == "unknown":
            assert r["attempts"] == 1 and r["locked_until"] is None
            assert r["last_error"].startswith("LeaseExpired: attempt 1 over sms was still sending")
            assert "the sms channel has no idempotency key" in r["last_error"]


def test_four_ticks_in_one_process_at_once_share_nothing(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    """The same race with coroutines on four connections: the claim is the only thing that decides."""
    ids = add_due(conn, 60)
    settings = settings_for(database_url, provider, "email", batch_size=60)

    async def race() -> list[int]:
        conns = [await db.connect(database_url) for _ in range(4)]
        try:
            results = await asyncio.gather(*(run_tick(c, settings, now=NOW) for c in conns))
        finally:
            for c in conns:
                await c.close()
        return [r.reminders.sent for r in results]

    sent = asyncio.run(race())
    assert sum(sent) == 60 and len(provider.requests) == 60
    assert sorted(provider.keys()) == sorted(f"reminder:{i}:24h" for i in ids)
    assert tick(database_url, settings, NOW).reminders.sent == 0 and len(provider.requests) == 60
