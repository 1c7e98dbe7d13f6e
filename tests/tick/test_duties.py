"""crontick.tick.duties: the list the tick runs; the pipeline runs exactly the duties it is given, each in its place."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import psycopg

import crontick
from crontick.tick import duties
from crontick.tick.duty import Duty, Tick
from crontick.tick.pacing import Pacing
from crontick.tick.pipeline import TickResult, run_tick
from tests.support.core_jobs import db_now
from tests.tick.support import on_conn, settings_for

events: list[str] = []


@crontick.handler("t_tick_duties.job")
async def job(payload: Any, job: crontick.Job) -> None:
    events.append(f"job {payload['n']}")


class Before(Duty):
    name = "first"

    def asks(self, tick: Tick, now: datetime) -> Mapping[str, Any]:
        events.append(f"{self.name}.asks")
        return {"anything": 1}

    async def run(self, tick: Tick) -> int:
        events.append(f"{self.name}.run {dict(tick.part(self.name))}")
        return 0


class After(Duty):
    name = "last"
    after_record = True

    async def run(self, tick: Tick) -> None:
        events.append(f"{self.name}.run recorded={tick.recorded is not None}")


class Enqueues(Duty):
    """Makes a job due now, as the wake-ups booking will: the tick claims it into its own batch."""

    name = "enqueues"

    async def run(self, tick: Tick) -> int:
        await tick.conn.execute("insert into jobs (type, payload) values ('t_tick_duties.job', '{\"n\": 2}')")
        return 1

    def made_due(self, counts: int) -> bool:
        return counts > 0


def ticked(url: str, listed: tuple[Duty, ...]) -> TickResult:
    with psycopg.connect(url) as conn:
        now = db_now(conn)
    return on_conn(
        url, lambda conn: run_tick(conn, settings_for(url), now=now, source="test", pacing=Pacing(), duties=listed)
    )


def test_the_tick_runs_its_duties_in_the_order_listed() -> None:
    assert [d.name for d in duties.DUTIES] == [
        "reminders", "schedules", "rescue", "silence", "wakeups", "alerts", "retention"
    ]  # fmt: skip
    assert [d.after_record for d in duties.DUTIES] == [False, False, False, True, True, True, True]


def test_an_idle_tick_runs_exactly_the_duties_listed_and_asks_the_probe_theirs(database_url: str) -> None:
    events.clear()
    result = ticked(database_url, (Before(), After()))
    # The probe asked each duty; a name it has no answer for reads as nothing due.
    assert events == ["first.asks", "first.run {}", "last.run recorded=False"]
    assert result == TickResult(duration_ms=result.duration_ms)
    with psycopg.connect(database_url) as conn:
        assert conn.execute("select count(*) from crontick_ticks").fetchone() == (1,)  # the probe logged it


def test_a_working_tick_runs_the_duties_before_its_batch_and_after_its_record(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        crontick.enqueue(conn, "t_tick_duties.job", {"n": 1})
    events.clear()
    result = ticked(database_url, (Before(), After()))
    assert events == ["first.asks", "first.run {}", "job 1", "last.run recorded=True"]
    assert result.jobs.succeeded == 1


def test_jobs_a_duty_makes_due_run_in_the_same_tick(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        crontick.enqueue(conn, "t_tick_duties.job", {"n": 1})
    events.clear()
    result = ticked(database_url, (Enqueues(),))
    assert sorted(events) == ["job 1", "job 2"] and result.jobs.claimed == 2


def test_the_probe_asks_each_listed_duty_under_its_name(database_url: str) -> None:
    async def asked(conn: psycopg.AsyncConnection[Any]) -> dict[str, Any]:
        tick = Tick(conn, settings_for(database_url), Pacing(), lambda: 0.0, 1.0, None)
        return duties.asks(tick, await _now(conn), (Before(), After()))

    events.clear()
    assert on_conn(database_url, asked) == {"first": {"anything": 1}}  # After asks nothing: left out


async def _now(conn: psycopg.AsyncConnection[Any]) -> datetime:
    row = await (await conn.execute("select now()")).fetchone()
    assert row is not None
    now: datetime = row[0]
    return now
