"""A waker books a recurring schedule's next slot: the tick that runs a slot (or first syncs the schedule) knows
when the next one falls due, read by its own schedule statements, and books it as any due job. Without that, an
hourly schedule behind a daily safety net ran once a day."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import psycopg
import pytest

import crontick
from crontick.schedules import registry
from crontick.tick.follow_up import FOLLOW_UP_MARGIN_SECONDS
from tests.support.core_jobs import tick
from tests.support.credentials import QSTASH_CURRENT, QSTASH_NEXT
from tests.support.qstash_server import QStashStandIn, qstash_stand_in
from tests.support.waking import TOKEN, settings_for

NAME = "t-wakers-every-minute"
SLOT = "t_wakers_schedules.slot"


@crontick.handler(SLOT)
def slot(payload: Any, job: crontick.Job) -> None:
    pass


@pytest.fixture
def declared() -> Iterator[None]:
    registry.unregister(NAME)
    crontick.schedule(NAME, "* * * * *", SLOT, catch_up="latest")
    yield
    registry.unregister(NAME)


def _next_slot(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("select next_at from crontick_schedules where name = %s", (NAME,)).fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def _booked(conn: psycopg.Connection[Any], stand_in: QStashStandIn) -> tuple[list[Any], list[float]]:
    rows = conn.execute("select instant, status from crontick.crontick_wakeups order by instant").fetchall()
    return rows, [d.due_at for d in stand_in.pending()]


def test_the_next_slot_of_a_schedule_is_booked_when_it_syncs_and_when_a_slot_runs(
    database_url: str, conn: psycopg.Connection[Any], declared: None
) -> None:
    # A budget too short to wait in-process for the next minute's slot (crontick.tick.follow_up), whatever second of
    # the minute the test runs at: each tick books the slot instead.
    with qstash_stand_in(TOKEN, QSTASH_CURRENT, held=True) as stand_in:
        settings = settings_for(database_url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                                qstash_current_signing_key=QSTASH_CURRENT, qstash_next_signing_key=QSTASH_NEXT,
                                public_url="http://127.0.0.1:9",
                                time_budget_seconds=FOLLOW_UP_MARGIN_SECONDS / 2)  # fmt: skip
        synced = tick(database_url, settings)  # the schedule's first sight: its slots start from now
        first = _next_slot(conn)
        assert (synced.next_due_at, synced.wakeups) == (first, (1, 0))
        assert _booked(conn, stand_in) == ([(first, "booked")], [first.timestamp()])

        # As if a minute had passed: the slot is due, and this tick runs it.
        conn.execute(
            "update crontick_schedules set evaluated_until = evaluated_until - interval '1 minute',"
            " next_at = '-infinity' where name = %s",
            (NAME,),
        )
        ran = tick(database_url, settings)
        assert (ran.schedules.enqueued, ran.jobs.succeeded) == (1, 1)
        assert ran.next_due_at == _next_slot(conn) == first  # booked already: no second call
        assert ran.wakeups == (0, 0) and _booked(conn, stand_in) == ([(first, "booked")], [first.timestamp()])

        # A minute later still: the next slot is a new instant, booked in place of the old one.
        conn.execute(
            "update crontick_schedules set evaluated_until = evaluated_until + interval '1 minute',"
            " next_at = next_at + interval '1 minute' where name = %s",
            (NAME,),
        )
        later = tick(database_url, settings)
        assert later.next_due_at is not None and later.next_due_at == _next_slot(conn) > first
        assert later.wakeups == (1, 0)
