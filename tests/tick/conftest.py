"""Fixtures for the tick's duty tests: run one duty on a real connection, given its part of the probe's answer."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import psycopg
import pytest

from crontick.settings import Settings
from crontick.tick.duty import Duty, Tick
from crontick.tick.pacing import Pacing
from tests.support.wire import traced
from tests.tick.support import DutyRun, settings_for


@pytest.fixture
def duty_run(database_url: str) -> DutyRun:
    """duty_run(duty, answer, ...): what the duty counted, its tick, and the named statements it sent.

    `answer`: the probe's answer by duty name (the duty reads its own part). The tick's `now` is the
    database's unless given; `seconds_left` of budget (negative: out of time); other keywords set
    attributes of the tick (send_reminders, jobs).
    """

    def run(
        duty: Duty,
        answer: Mapping[str, Mapping[str, Any]],
        *,
        settings: Settings | None = None,
        now: datetime | None = None,
        pacing: Pacing | None = None,
        seconds_left: float = 30.0,
        **attrs: Any,
    ) -> tuple[Any, Tick, list[str]]:
        s = settings or settings_for(database_url)
        clock = time.monotonic
        tick = Tick(None, s, pacing or Pacing(), clock, clock() + seconds_left, now)  # type: ignore[arg-type]
        tick.answer = answer
        for name, value in attrs.items():
            setattr(tick, name, value)
        if tick.now is None:
            with psycopg.connect(database_url) as conn:
                tick.now = conn.execute("select now()").fetchone()[0]  # type: ignore[index]

        async def go(conn: psycopg.AsyncConnection[Any]) -> Any:
            tick.conn = conn
            return await duty.run(tick)

        counts, statements = traced(database_url, go)
        return counts, tick, statements

    return run
