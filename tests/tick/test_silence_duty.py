"""crontick.tick.silence_duty: the probe raises the alert of a silence it ends; the duty logs it and paces the next look."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from crontick.settings import Settings
from crontick.tick import probe, silence_duty
from crontick.tick.duty import Tick
from crontick.tick.pacing import Pacing
from crontick.tick.silence_duty import SilenceCounts
from tests.support.constants import TEST_SECRET
from tests.tick.support import DutyRun, on_conn, settings_for

DUTY = silence_duty.DUTY
NOW = datetime(2026, 12, 5, 8, 0, tzinfo=UTC)


def asked(pacing: Pacing, now: datetime) -> Any:
    s = Settings(database_url="postgresql:///x", cron_secret=TEST_SECRET, expected_interval_seconds=600)
    return DUTY.asks(Tick(None, s, pacing, lambda: 0.0, 1.0, None), now)  # type: ignore[arg-type]


def test_it_asks_for_a_silence_only_when_this_process_has_not_ticked_within_the_threshold() -> None:
    pacing = Pacing()
    assert asked(pacing, NOW) == {"after": 1200.0}  # two expected intervals
    pacing.last_finished_at = NOW - timedelta(seconds=1199)
    assert asked(pacing, NOW) == {"after": None}  # no tick can follow a silence: the probe skips the check
    pacing.last_finished_at = NOW - timedelta(seconds=1200)
    assert asked(pacing, NOW) == {"after": 1200.0}
    pacing.last_finished_at = NOW + timedelta(seconds=5)  # the clock went back: look
    assert asked(pacing, NOW) == {"after": 1200.0}


def test_it_counts_the_silence_the_probe_found_and_remembers_when_the_tick_finished(duty_run: DutyRun) -> None:
    pacing = Pacing()
    counts, tick, statements = duty_run(DUTY, {"silence": {"silent_seconds": 7200.0}}, pacing=pacing, now=NOW)
    assert counts == SilenceCounts(7200.0) and statements == []
    assert pacing.last_finished_at == NOW
    assert duty_run(DUTY, {"silence": {"silent_seconds": None}})[0] == SilenceCounts()


def test_the_probe_answers_a_silence_that_a_tick_ends(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "insert into crontick_ticks (started_at, finished_at, source, summary)"
            " values (now() - interval '3 hours', now() - interval '3 hours', 'test', '{}')"
        )
    found = on_conn(
        database_url, lambda conn: probe.look(conn, settings_for(database_url), None, "test", {}, pacing=Pacing())
    )
    silent = found.duties["silence"]["silent_seconds"]
    assert 3 * 3600 - 5 <= silent <= 3 * 3600 + 5
    with psycopg.connect(database_url) as conn:
        assert conn.execute("select event from crontick_alerts").fetchall() == [("scheduler_silent",)]
