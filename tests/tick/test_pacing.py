"""crontick.tick.pacing: what a process remembers between ticks is one object, and two are independent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from crontick.settings import Settings
from crontick.tick import pacing, retention
from crontick.tick.pacing import Pacing
from tests.support.constants import TEST_SECRET

NOW = datetime(2026, 12, 5, 8, 0, tzinfo=UTC)


def test_the_estimate_of_the_databases_clock_moves_by_the_offset_the_probe_measured() -> None:
    p = Pacing()
    before = datetime.now(UTC)
    assert before <= p.estimated_now() <= datetime.now(UTC)
    p.db_ahead = timedelta(minutes=-5)  # the database's clock is five minutes behind this host's
    assert p.estimated_now() <= datetime.now(UTC) - timedelta(minutes=4)


def test_two_processes_pace_apart_and_reset_forgets_everything() -> None:
    s = Settings(database_url="postgresql:///x", cron_secret=TEST_SECRET)
    one, other = Pacing(), Pacing()
    assert retention.probe(s, NOW, one)["done_before"] is not None
    assert retention.probe(s, NOW, one)["done_before"] is None  # paused: it looked a moment ago
    assert retention.probe(s, NOW, other)["done_before"] is not None
    one.last_finished_at, one.retention_owed, one.db_ahead = NOW, True, timedelta(seconds=3)
    one.reset()
    assert (one.last_finished_at, one.retention_owed, one.db_ahead, one.retention_from) == (
        None,
        False,
        timedelta(0),
        None,
    )
    assert retention.probe(s, NOW, one)["done_before"] is not None


def test_without_one_given_the_process_pacing_is_used() -> None:
    s = Settings(database_url="postgresql:///x", cron_secret=TEST_SECRET)
    pacing.PROCESS.reset()
    retention.probe(s, NOW)
    assert pacing.PROCESS.retention_paused_at == NOW
    retention.reset()
    assert pacing.PROCESS.retention_paused_at is None
