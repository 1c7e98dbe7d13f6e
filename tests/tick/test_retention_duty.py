"""crontick.tick.retention_duty: deletes rows past their keep period when the probe finds some (or a backlog is owed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from crontick.settings import Settings
from crontick.tick import retention, retention_duty
from crontick.tick.duty import Tick
from crontick.tick.pacing import Pacing
from tests.support.constants import TEST_SECRET
from tests.tick.support import DutyRun

DUTY = retention_duty.DUTY
NOW = datetime(2026, 12, 5, 8, 0, tzinfo=UTC)


def asked(pacing: Pacing, now: datetime) -> Any:
    s = Settings(database_url="postgresql:///x", cron_secret=TEST_SECRET, keep_done_days=7, keep_failed_days=30)
    return DUTY.asks(Tick(None, s, pacing, lambda: 0.0, 1.0, None), now)  # type: ignore[arg-type]


def test_it_asks_with_the_cutoffs_then_not_again_within_its_pause() -> None:
    pacing = Pacing()
    assert asked(pacing, NOW) == {
        "done_before": (NOW - timedelta(days=7)).isoformat(),
        "failed_before": (NOW - timedelta(days=30)).isoformat(),
        "kept_before": (NOW - timedelta(days=30)).isoformat(),
    }
    later = NOW + timedelta(seconds=retention.PROBE_SECONDS - 1)
    assert asked(pacing, later) == dict.fromkeys(("done_before", "failed_before", "kept_before"))
    assert asked(Pacing(), later)["done_before"] is not None  # another process's pacing is its own
    assert asked(pacing, NOW + timedelta(seconds=retention.PROBE_SECONDS))["done_before"] is not None


def old_done_job(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "insert into jobs (type, payload, status, updated_at) values ('old', '{}', 'done', now() - interval '30 days')"
    )


def test_due_it_deletes_and_counts_what_it_deleted(database_url: str, duty_run: DutyRun) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        old_done_job(conn)
    deleted, _, statements = duty_run(DUTY, {"retention": {"due": True}})
    assert deleted == retention.Deleted(done_jobs=1)
    assert "retention_delete" in statements
    with psycopg.connect(database_url) as conn:
        assert conn.execute("select count(*) from jobs").fetchone() == (0,)


def test_not_due_and_nothing_owed_it_costs_no_statement_but_a_backlog_owed_runs_it(
    database_url: str, duty_run: DutyRun
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        old_done_job(conn)
    assert duty_run(DUTY, {"retention": {"due": False}})[::2] == (None, [])
    owing = Pacing()
    owing.retention_owed = True  # a full batch of a table the probe does not look at, last tick
    deleted, _, statements = duty_run(DUTY, {"retention": {"due": False}}, pacing=owing)
    assert deleted == retention.Deleted(done_jobs=1) and not owing.retention_owed


def test_with_too_little_budget_left_it_waits_and_looks_again_next_tick(duty_run: DutyRun) -> None:
    pacing = Pacing()
    asked(pacing, NOW)
    assert duty_run(DUTY, {"retention": {"due": True}}, pacing=pacing, seconds_left=0.5)[::2] == (None, [])
    assert asked(pacing, NOW + timedelta(seconds=1))["done_before"] is not None
