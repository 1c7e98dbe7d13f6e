"""crontick.testing's three functions against a real database: drain runs what is due (follow-ups too) and never
waits, advance brings retries, sleeps and schedules' slots due, enqueued lists the queue."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import psycopg
import pytest

import crontick
from crontick.errors import CrontickError
from crontick.schedules import registry
from crontick.testing import advance, drain, enqueued

_seen: list[str] = []


@crontick.handler("t_testing.chain")
def chain(payload: dict[str, Any], job: crontick.Job) -> None:
    """Enqueues the next link until `left` reaches 0: follow-ups that come due while drain runs."""
    _seen.append(f"chain {payload['left']}")
    if payload["left"] > 0:
        with psycopg.connect(payload["url"], autocommit=True) as conn:
            crontick.enqueue(conn, "t_testing.chain", {"left": payload["left"] - 1, "url": payload["url"]})


@crontick.handler("t_testing.naps")
async def naps(payload: dict[str, Any], job: crontick.Job) -> None:
    await job.sleep("nap", 600)
    _seen.append("woke")


@crontick.handler("t_testing.flaky")
def flaky(payload: dict[str, Any], job: crontick.Job) -> None:
    _seen.append(f"flaky {job.attempt}")
    if job.attempt == 1:
        raise ConnectionError("down on the first attempt")


@pytest.fixture(autouse=True)
def seen() -> list[str]:
    _seen.clear()
    return _seen


def test_drain_runs_follow_ups_enqueued_while_it_runs_and_sums_the_ticks(
    database_url: str, conn: psycopg.Connection[Any], seen: list[str]
) -> None:
    crontick.enqueue(conn, "t_testing.chain", {"left": 3, "url": database_url})
    summary = drain(conn)
    assert seen == ["chain 3", "chain 2", "chain 1", "chain 0"]
    assert (summary["jobs"]["claimed"], summary["jobs"]["succeeded"], summary["more"]) == (4, 4, False)
    assert [j["status"] for j in enqueued(conn, "t_testing.chain")] == ["done"] * 4


def test_drain_never_waits_for_a_job_not_yet_due_and_advance_brings_it_due_adding_up(
    conn: psycopg.Connection[Any], seen: list[str]
) -> None:
    now = conn.execute("select now()").fetchone()[0]  # type: ignore[index]
    crontick.enqueue(conn, "t_testing.flaky", {}, run_after=now + timedelta(seconds=100))
    assert drain(conn)["jobs"]["claimed"] == 0
    advance(conn, 60)
    assert drain(conn)["jobs"]["claimed"] == 0
    advance(conn, 45)  # 105 s in all
    assert drain(conn)["jobs"]["retried"] == 1
    advance(conn, 5 * 60)  # the first retry: 1 minute, give or take 20 %
    assert drain(conn)["jobs"]["succeeded"] == 1
    assert seen == ["flaky 1", "flaky 2"]


def test_advance_wakes_a_sleeping_handler(conn: psycopg.Connection[Any], seen: list[str]) -> None:
    job_id = crontick.enqueue(conn, "t_testing.naps", {})
    drain(conn)
    advance(conn, 599)
    drain(conn)
    assert seen == []
    advance(conn, 2)
    drain(conn)
    assert seen == ["woke"]
    assert [(j["id"], j["status"], j["attempts"]) for j in enqueued(conn)] == [(job_id, "done", 1)]


def test_advance_brings_a_schedules_next_slot_due(conn: psycopg.Connection[Any], seen: list[str]) -> None:
    crontick.schedule("t_testing.hourly", "0 * * * *", "t_testing.chain", {"left": 0, "url": ""})
    try:
        drain(conn)  # the schedule starts now: nothing earlier is backfilled
        assert enqueued(conn, "t_testing.chain") == []
        advance(conn, 3600)
        drain(conn)
        assert seen == ["chain 0"]
        [job] = enqueued(conn, "t_testing.chain")
        assert job["status"] == "done"
    finally:
        registry.unregister("t_testing.hourly")


def test_enqueued_lists_oldest_first_and_filters_by_type(conn: psycopg.Connection[Any]) -> None:
    first = crontick.enqueue(conn, "t_testing.flaky", {"n": 1}, key="k1")
    second = crontick.enqueue(conn, "t_testing.naps", {"n": 2})
    third = crontick.enqueue(conn, "t_testing.flaky", {"n": 3})
    assert [(j["id"], j["type"], j["payload"], j["status"]) for j in enqueued(conn)] == [
        (first, "t_testing.flaky", {"n": 1}, "pending"),
        (second, "t_testing.naps", {"n": 2}, "pending"),
        (third, "t_testing.flaky", {"n": 3}, "pending"),
    ]
    assert [j["id"] for j in enqueued(conn, type="t_testing.flaky")] == [first, third]
    assert enqueued(conn)[0]["key"] == "k1"


def test_a_connection_with_a_transaction_open_is_refused_with_the_reason(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        crontick.enqueue(conn, "t_testing.flaky", {})  # not committed: the ticks' own connection cannot see it
        with pytest.raises(CrontickError, match="expected a connection with no transaction open"):
            drain(conn)
        with pytest.raises(CrontickError, match="expected seconds >= 0"):
            advance(conn, -1)


def test_drain_works_from_inside_a_running_event_loop(conn: psycopg.Connection[Any], seen: list[str]) -> None:
    crontick.enqueue(conn, "t_testing.chain", {"left": 0, "url": ""})

    async def an_async_test() -> dict[str, Any]:
        return drain(conn)

    assert asyncio.run(an_async_test())["jobs"]["succeeded"] == 1
    assert seen == ["chain 0"]
