"""GET /api/metrics, issue 37's series: slow jobs per type, step durations per type, yields among the ticks' outcomes,
and each declared rate limit's starts, count and the due jobs it holds back; still one statement per scrape."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import psycopg
from prometheus_client.parser import text_string_to_metric_families

import crontick
from crontick import db
from crontick.admin import metrics
from crontick.jobs import registry
from tests.admin.api_support import VIEWER, api_settings
from tests.support.core_jobs import db_now, tick
from tests.support.wire import traced

LIMIT = "t_metrics_series.provider"


async def _nap() -> str:
    await asyncio.sleep(0.05)
    return "ok"


@crontick.handler("t_metrics_series.steps")
async def with_steps(payload: Any, job: crontick.Job) -> None:
    await job.step("first", _nap)
    await job.step("second", _nap)


@crontick.handler("t_metrics_series.slow")
async def slow(payload: Any, job: crontick.Job) -> None:
    await asyncio.sleep(0.4)


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _scrape(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    answer = httpx.get(f"{base}/api/metrics", headers=VIEWER)
    assert answer.status_code == 200, answer.text
    return _samples(answer.text)


def test_slow_jobs_and_step_durations_per_type_after_a_tick(
    database_url: str, conn: psycopg.Connection[Any], live_app: Callable[..., Any]
) -> None:
    crontick.enqueue(conn, "t_metrics_series.steps", {})
    crontick.enqueue(conn, "t_metrics_series.slow", {})
    settings = api_settings(database_url, time_budget_seconds=5.0, lease_seconds=40.0, slow_job_seconds=0.2)
    assert tick(database_url, settings, now=db_now(conn)).jobs.succeeded == 2
    with live_app(settings) as base:
        got = _scrape(base)
    assert got["crontick_slow_jobs_last_hour", (("type", "t_metrics_series.slow"),)] == 1
    assert got["crontick_slow_jobs_last_hour", (("type", "t_metrics_series.steps"),)] == 0
    steps = (("type", "t_metrics_series.steps"),)
    assert got["crontick_step_duration_seconds_last_hour_count", steps] == 2
    # Each step slept 50 ms: both in a bucket whose bound is at least that, none in one below 32 ms.
    assert got["crontick_step_duration_seconds_last_hour_bucket", (("le", "0.032"), *steps)] == 0
    assert got["crontick_step_duration_seconds_last_hour_bucket", (("le", "+Inf"), *steps)] == 2
    assert not [
        k for k in got if k[0].startswith("crontick_step_duration") and ("type", "t_metrics_series.slow") in k[1]
    ]


def test_yields_and_expiries_are_tick_outcomes(
    database_url: str, conn: psycopg.Connection[Any], live_app: Callable[..., Any]
) -> None:
    """Two tick rows of the last hour as the record statement writes them (jobs.yielded, jobs.expired), one older."""
    for yielded, age in ((2, "1 minute"), (3, "2 minutes"), (7, "2 hours")):
        conn.execute(
            "insert into crontick_ticks (started_at, finished_at, source, summary)"
            " values (now() - %s::interval, now() - %s::interval, 'test', jsonb_build_object('jobs',"
            " jsonb_build_object('succeeded', 1, 'yielded', %s::int, 'expired', %s::int + 1)))",
            (age, age, yielded, yielded),
        )
    with live_app(api_settings(database_url)) as base:
        got = _scrape(base)
    assert got["crontick_tick_jobs_last_hour", (("outcome", "yielded"),)] == 5
    assert got["crontick_tick_jobs_last_hour", (("outcome", "expired"),)] == 7
    assert got["crontick_tick_jobs_last_hour", (("outcome", "succeeded"),)] == 2


def test_a_declared_rate_limit_shows_its_starts_count_and_the_due_jobs_it_holds(
    database_url: str, conn: psycopg.Connection[Any], live_app: Callable[..., Any]
) -> None:
    crontick.rate_limit(LIMIT, 2, per_seconds=3600)
    crontick.handler("t_metrics_series.limited", rate_limit=LIMIT)(lambda payload, job: None)
    try:
        for n in range(5):
            crontick.enqueue(conn, "t_metrics_series.limited", {"n": n})
        settings = api_settings(database_url)
        assert tick(database_url, settings, now=db_now(conn)).jobs.succeeded == 2  # the limit's two starts
        with live_app(settings) as base:
            got = _scrape(base)
        assert got["crontick_rate_limit_starts", (("limit", LIMIT),)] == 2
        assert got["crontick_rate_limit_capacity", (("limit", LIMIT),)] == 2
        assert got["crontick_rate_limit_held_jobs", (("limit", LIMIT),)] == 3
        figures, sent = traced(database_url, metrics.read_figures)
        assert [name for name in sent if name in db.QUERIES] == ["admin_read_begin", "metrics_read"]
        conn.execute("update crontick_rate_limits set starts_at = '{}', starts_n = '{}' where name = %s", (LIMIT,))
        with live_app(settings) as base:
            again = _scrape(base)
        assert again["crontick_rate_limit_starts", (("limit", LIMIT),)] == 0
        assert again["crontick_rate_limit_held_jobs", (("limit", LIMIT),)] == 0  # a free window holds nothing back
    finally:
        registry.unregister("t_metrics_series.limited")
