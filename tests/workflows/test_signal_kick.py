"""crontick.signal in Python starts a tick once the caller's transaction commits (as crontick.kick does), never before."""

from __future__ import annotations

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
