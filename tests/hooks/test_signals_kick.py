"""crontick.signal in Python starts a tick once the caller's transaction commits (as crontick.kick does), never before."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import psycopg

import crontick
from crontick.hooks import kick
from crontick.runtime import Runtime
from tests.support.core_jobs import job_row, tick
from tests.support.hooks import settings_for


@crontick.handler("t_wfkick.wait")
async def wait(payload: Any, job: crontick.Job) -> None:
    await job.wait_for("reply", payload["key"], timeout_seconds=3600)


def _kick_ticks(conn: psycopg.Connection[Any]) -> int:
    return conn.execute("select count(*) from crontick_ticks where source = 'kick'").fetchone()[0]  # type: ignore[index,no-any-return]


def test_a_signal_in_a_transaction_kicks_a_tick_after_the_commit(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_wfkick.wait", {"key": "delivery:SM1"})
    tick(database_url)
    assert job_row(conn, job_id)["status"] == "waiting"
    kick.attach(Runtime(settings_for(database_url, kick="inline")))
    try:
        with conn.transaction():
            assert crontick.signal(conn, "delivery:SM1", {"status": "delivered"}) == job_id
            time.sleep(0.5)  # the kick's thread waits for this transaction; no tick starts meanwhile
            assert _kick_ticks(conn) == 0
        kick.wait_for_threads()
    finally:
        kick.attach(None)
    assert _kick_ticks(conn) == 1
    assert job_row(conn, job_id)["status"] == "done"  # the kicked tick ran the woken job


def test_a_signal_on_an_autocommit_connection_kicks_at_once(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_wfkick.wait", {"key": "delivery:SM2"})
    tick(database_url)
    kick.attach(Runtime(settings_for(database_url, kick="inline")))
    try:
        assert crontick.signal(conn, "delivery:SM2", None) == job_id
        kick.wait_for_threads()
    finally:
        kick.attach(None)
    assert job_row(conn, job_id)["status"] == "done"


# Enough signals to use up a server's connections when each started its own kick thread (issue 33).
SIGNALS = 200


def _connections(database_url: str) -> int:
    """The server's connections to this test's database, counted from a connection of our own (not counted)."""
    with psycopg.connect(database_url, autocommit=True) as own:
        row = own.execute(
            "select count(*) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()"
            " and backend_type = 'client backend'"
        ).fetchone()
    return int(row[0]) if row else 0


def _kick_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "crontick-kick")


def _signal_many_in_one_transaction(database_url: str, conn: psycopg.Connection[Any], mode: str) -> tuple[int, int]:
    """SIGNALS signals in one transaction (the first wakes a waiting job); the most kick threads alive and the
    most connections opened beside the caller's while it stays open, each seen for half a second."""
    before = _connections(database_url)
    threads = connections = 0
    kick.attach(Runtime(settings_for(database_url, kick=mode)))
    try:
        with conn.transaction():
            for n in range(SIGNALS):
                crontick.signal(conn, f"order:{n}", {"n": n})
            deadline = time.monotonic() + 0.5  # time for every thread started to connect and wait
            while time.monotonic() < deadline:
                threads = max(threads, _kick_threads())
                connections = max(connections, _connections(database_url) - before)
                time.sleep(0.05)
        kick.wait_for_threads()
    finally:
        kick.attach(None)
    return threads, connections


def test_a_transactions_signals_wait_for_its_commit_in_one_thread_and_kick_once(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_wfkick.wait", {"key": "order:0"})
    tick(database_url)
    threads, connections = _signal_many_in_one_transaction(database_url, conn, "inline")
    assert (threads, connections) == (1, 1)
    assert _kick_ticks(conn) == 1
    assert job_row(conn, job_id)["status"] == "done"  # the one kick ran the job the first signal woke
    assert conn.execute("select count(*) from crontick_signals").fetchone() == (SIGNALS - 1,)


def test_with_kicks_off_a_transactions_signals_start_no_thread_and_no_connection(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_wfkick.wait", {"key": "order:0"})
    tick(database_url)
    assert _signal_many_in_one_transaction(database_url, conn, "off") == (0, 0)
    assert _kick_ticks(conn) == 0
    assert job_row(conn, job_id)["status"] == "pending"  # woken, and left for the scheduled tick


def test_with_kicks_off_a_signal_on_an_autocommit_connection_starts_no_thread(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    kick.attach(Runtime(settings_for(database_url, kick="off")))
    try:
        for n in range(20):
            crontick.signal(conn, f"order:{n}", None)
        started = _kick_threads()
        kick.wait_for_threads()
    finally:
        kick.attach(None)
    assert started == 0 and _kick_ticks(conn) == 0


def test_an_async_transactions_signals_wait_for_its_commit_in_one_thread(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    async def signal_many() -> int:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
            async with aconn.transaction():
                for n in range(50):
                    await crontick.signal(aconn, f"async:{n}", n)
                return _kick_threads()

    kick.attach(Runtime(settings_for(database_url, kick="inline")))
    try:
        threads = asyncio.run(signal_many())
        kick.wait_for_threads()
    finally:
        kick.attach(None)
    assert threads == 1 and _kick_ticks(conn) == 1
