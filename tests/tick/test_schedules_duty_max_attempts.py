"""A schedule's slot job gets its handler's `max_attempts=` (the tick's schedules duty passes it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import crontick
from crontick.schedules import registry
from tests.support.core_jobs import tick


@crontick.handler("t_schedmax.job", max_attempts=2)
def job(payload: Any, job: crontick.Job) -> None:
    pass


@pytest.fixture
def declared() -> Iterator[None]:
    registry.unregister("t-schedmax")
    crontick.schedule("t-schedmax", "* * * * *", "t_schedmax.job", catch_up="latest")
    yield
    registry.unregister("t-schedmax")


def test_a_slots_job_gets_its_handlers_max_attempts(
    declared: None, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    tick(database_url)  # first sight: the schedule is synced
    conn.execute(
        "update crontick_schedules set evaluated_until = evaluated_until - interval '1 hour', next_at = '-infinity'"
        " where name = 't-schedmax'"
    )
    tick(database_url)
    assert conn.execute("select type, max_attempts from jobs where schedule = 't-schedmax'").fetchall() == [
        ("t_schedmax.job", 2)
    ]
