"""crontick.tick.schedules_duty: enqueues the slots that have come, and syncs new declarations once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

import crontick
from crontick.schedules import registry
from crontick.schedules.registry import ScheduleCounts
from crontick.tick import schedules_duty
from crontick.tick.duty import Tick
from crontick.tick.pacing import Pacing
from tests.tick.support import DutyRun, on_conn, settings_for

DUTY = schedules_duty.DUTY
NAME = "t-tick-every-minute"


@crontick.handler("t_tick_schedules.slot")
async def slot(payload: Any, job: crontick.Job) -> None:
    pass


@pytest.fixture
def declared() -> Iterator[None]:
    registry.unregister(NAME)
    crontick.schedule(NAME, "* * * * *", "t_tick_schedules.slot", catch_up="latest")
    yield
    registry.unregister(NAME)


def asked(url: str) -> Any:
    async def go(conn: psycopg.AsyncConnection[Any]) -> Any:
        tick = Tick(conn, settings_for(url), Pacing(), lambda: 0.0, 1.0, None)
        return DUTY.asks(tick, datetime.now(UTC))

    return on_conn(url, go)


def test_new_declarations_are_synced_once_then_only_a_due_slot_costs_statements(
    database_url: str, duty_run: DutyRun, declared: None
) -> None:
    assert asked(database_url) == {"unsynced": True}  # the probe then counts the schedules due
    counts, _, statements = duty_run(DUTY, {"schedules": {"due": False}})
    assert statements[0] == "schedule_due" and counts.enqueued == 0  # synced: slots start from now
    assert asked(database_url) == {"unsynced": False}
    assert duty_run(DUTY, {"schedules": {"due": False}})[::2] == (ScheduleCounts(), [])
    with psycopg.connect(database_url, autocommit=True) as conn:  # as if no tick had run for an hour
        conn.execute(
            "update crontick_schedules set evaluated_until = evaluated_until - interval '1 hour',"
            " next_at = '-infinity' where name = %(n)s",
            {"n": NAME},
        )
    waking = settings_for(database_url, waker="qstash", qstash_token="t", public_url="http://127.0.0.1:9")
    counts, tick, statements = duty_run(DUTY, {"schedules": {"due": True}}, settings=waking)
    assert counts == ScheduleCounts(enqueued=1, skipped=counts.skipped) and DUTY.made_due(counts)
    assert statements == ["schedule_due", "schedule_apply"]
    # With a waker, the next slot, read by the same statements: the tick's next_due_at, which the waker books.
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert DUTY.next_at(tick) == conn.execute("select next_at from crontick_schedules").fetchone()[0]  # type: ignore[index]


def test_out_of_time_it_waits_for_a_later_tick(duty_run: DutyRun, declared: None) -> None:
    assert duty_run(DUTY, {"schedules": {"due": True}}, seconds_left=-1.0)[::2] == (ScheduleCounts(), [])
    assert not DUTY.made_due(ScheduleCounts(enqueued=0, skipped=2))


def test_it_names_the_probes_next_slot_when_none_was_due_else_the_one_its_run_read(duty_run: DutyRun) -> None:
    _, tick, _ = duty_run(DUTY, {"schedules": {"due": False, "next_at": "2026-12-05T08:01:00+00:00"}})
    assert DUTY.next_at(tick) is not None and DUTY.next_at(tick).isoformat() == "2026-12-05T08:01:00+00:00"  # type: ignore[union-attr]
    tick.answer = {"schedules": {"due": True, "next_at": "2026-12-05T08:01:00+00:00"}}
    assert DUTY.next_at(tick) is None  # no schedule declared: its run read nothing
    tick.found_next[DUTY.name] = datetime(2026, 12, 5, 8, 2, tzinfo=UTC)
    assert DUTY.next_at(tick) == datetime(2026, 12, 5, 8, 2, tzinfo=UTC)
