"""Statements on the wire for durable steps: one load per batch (per workflow type), and finished steps of jobs running at
once written together, not one round trip per step per job; a batch without steps sends none of them."""

from __future__ import annotations

import asyncio
from collections import Counter
from functools import partial
from typing import Any

import psycopg

import crontick
from crontick.tick.pipeline import run_tick
from tests.support.core_jobs import db_now, settings_for
from tests.support.wire import tick_statements, traced

JOBS = 100


async def _noop(n: int) -> int:
    await asyncio.sleep(0)
    return n


@crontick.handler("t_wfwire.three")
async def three(payload: Any, job: crontick.Job) -> None:
    a = await job.step("a", _noop, 1)
    b = await job.step("b", _noop, a + 1)
    await job.step("c", _noop, b + 1)


@crontick.handler("t_wfwire.plain")
async def plain(payload: Any, job: crontick.Job) -> None:
    pass


def _tick(url: str, conn: psycopg.Connection[Any]) -> Counter[str]:
    return tick_statements(url, conn, jobs=JOBS, concurrency=JOBS)


def test_a_batch_of_three_step_workflows_loads_once_and_group_commits_its_steps(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    crontick.enqueue_many(conn, [("t_wfwire.three", {})] * JOBS)
    sent = _tick(database_url, conn)
    assert sent["job_steps_load"] == 1
    # 300 steps finished; written in a handful of group commits (one per step of the pipeline, plus
    # the first write of each, which goes out alone while the rest of the batch catches up).
    assert 3 <= sent["job_steps_record"] <= 8, sent
    assert conn.execute("select count(*) from job_steps").fetchone() == (3 * JOBS,)


def test_a_batch_without_steps_sends_no_step_statement(database_url: str, conn: psycopg.Connection[Any]) -> None:
    crontick.enqueue_many(conn, [("t_wfwire.plain", {})] * JOBS)
    sent = _tick(database_url, conn)
    assert sent["job_steps_load"] == sent["job_steps_record"] == 0
    assert sum(sent.values()) == 2, sent  # the probe (which claims) and the record statement, as before


@crontick.handler("t_wfwire.step_then")
async def step_then(payload: Any, job: crontick.Job) -> None:
    await job.step("a", _noop, 1)
    if payload["then"] == "block":
        await asyncio.sleep(30)  # the budget stops it: it yields
    raise ConnectionError("provider down")  # it fails its attempt


def test_a_yield_sends_no_statement_beyond_the_batchs_record(database_url: str, conn: psycopg.Connection[Any]) -> None:
    sent: dict[str, Counter[str]] = {}
    for then in ("fail", "block"):
        conn.execute("truncate jobs cascade")
        crontick.enqueue_many(conn, [("t_wfwire.step_then", {"then": then})] * 20)
        settings = settings_for(database_url, batch_size=20, concurrency=20, time_budget_seconds=1.0)
        tick_once = partial(run_tick, settings=settings, now=db_now(conn), source="test")
        result, names = traced(database_url, tick_once)
        assert (result.jobs.yielded, result.jobs.retried) == ((20, 0) if then == "block" else (0, 20))
        sent[then] = Counter(n for n in names if n != "job_steps_record")  # group commits vary with timing
    assert sent["block"] == sent["fail"]  # twenty yields cost what twenty retries cost: the batch's one record
