"""job.map over real ticks: one recorded step per item (name[i]), results in order, up to `concurrency` at once, a
later run resuming at the first unrecorded item (after a failed attempt or a yield)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from datetime import timedelta
from typing import Any

import psycopg
import pytest

import crontick
from tests.support.core_jobs import db_now, job_row, settings_for, tick

calls: Counter[int] = Counter()
results: dict[int, list[Any]] = {}
peak = [0, 0]  # running now, most at once
lock = threading.Lock()
skew = [0.0]


@pytest.fixture(autouse=True)
def _fresh() -> None:
    calls.clear()
    results.clear()
    peak[:] = [0, 0]
    skew[0] = 0.0


def _square(item: dict[str, Any]) -> int:
    with lock:
        calls[item["n"]] += 1
        peak[0] += 1
        peak[1] = max(peak)
    time.sleep(0.02)
    with lock:
        peak[0] -= 1
    if item.get("fail_once") and calls[item["n"]] == 1:
        raise ConnectionError(f"item {item['n']} failed")
    return item["n"] ** 2


async def _square_async(item: dict[str, Any]) -> int:
    calls[item["n"]] += 1
    peak[0] += 1
    peak[1] = max(peak)
    await asyncio.sleep(0.02)
    peak[0] -= 1
    return item["n"] ** 2


@crontick.step(timeout_seconds=3)
def _chunk(item: dict[str, Any]) -> int:
    skew[0] += 3.0  # the tick's clock: each chunk takes three seconds
    calls[item["n"]] += 1
    return item["n"]


def _items(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"n": n, "fail_once": n == payload.get("fail_at")} for n in range(payload["count"])]


@crontick.handler("t_map.sync")
def sync_map(payload: Any, job: crontick.Job) -> None:
    fn = _chunk if payload.get("chunks") else _square
    results[job.id] = job.map("squares", fn, _items(payload), concurrency=payload.get("concurrency", 1))


@crontick.handler("t_map.async")
async def async_map(payload: Any, job: crontick.Job) -> None:
    results[job.id] = await job.map("squares", _square_async, _items(payload), concurrency=payload["concurrency"])


def _names(conn: psycopg.Connection[Any], job_id: int) -> list[str]:
    rows = conn.execute("select name from job_steps where job_id = %s order by created_at, name", (job_id,))
    return sorted((r[0] for r in rows.fetchall()), key=lambda n: int(n.split("[")[1].rstrip("]")))


@pytest.mark.parametrize(("kind", "concurrency"), [("sync", 1), ("sync", 3), ("async", 1), ("async", 3)])
def test_each_item_is_a_recorded_step_and_the_results_come_in_order(
    database_url: str, conn: psycopg.Connection[Any], kind: str, concurrency: int
) -> None:
    job_id = crontick.enqueue(conn, f"t_map.{kind}", {"count": 7, "concurrency": concurrency})
    assert tick(database_url, now=db_now(conn)).jobs.succeeded == 1
    assert results[job_id] == [n * n for n in range(7)]
    assert _names(conn, job_id) == [f"squares[{i}]" for i in range(7)]
    assert peak[1] == concurrency  # never more at once than asked, and as many as asked


def test_a_retry_resumes_at_the_first_unrecorded_item(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_map.sync", {"count": 5, "fail_at": 3})
    tick(database_url, now=db_now(conn))
    assert job_row(conn, job_id)["attempts"] == 1 and _names(conn, job_id) == [f"squares[{i}]" for i in range(3)]
    conn.execute("update jobs set run_after = now() where id = %s", (job_id,))
    tick(database_url, now=db_now(conn))
    assert job_row(conn, job_id)["status"] == "done" and results[job_id] == [0, 1, 4, 9, 16]
    assert [calls[n] for n in range(5)] == [1, 1, 1, 2, 1]  # only the failed item ran again


def test_a_map_longer_than_the_budget_yields_and_finishes_over_ticks(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_map.sync", {"count": 5, "chunks": True})
    settings = settings_for(database_url, time_budget_seconds=8.0)
    at, ticks = db_now(conn), 0
    while job_row(conn, job_id)["status"] != "done" and ticks < 6:
        skew[0] = 0.0
        result = tick(database_url, settings, now=at, clock=lambda: time.monotonic() + skew[0])
        at, ticks = at + timedelta(seconds=10), ticks + 1
    assert ticks == 3  # two 3 s chunks fit in each 8 s budget
    assert result.jobs.succeeded == 1 and results[job_id] == [0, 1, 2, 3, 4]
    assert [calls[n] for n in range(5)] == [1] * 5 and job_row(conn, job_id)["attempts"] == 1


@pytest.mark.parametrize("bad", [0, 101, True, 1.5])
def test_a_bad_concurrency_is_refused(database_url: str, conn: psycopg.Connection[Any], bad: Any) -> None:
    job_id = crontick.enqueue(conn, "t_map.sync", {"count": 2, "concurrency": bad})
    tick(database_url, now=db_now(conn))
    error = job_row(conn, job_id)["last_error"]
    assert error.startswith("ConfigError: ") and "expected concurrency as an integer from 1 to 100" in error
    assert calls == Counter()  # no item ran
