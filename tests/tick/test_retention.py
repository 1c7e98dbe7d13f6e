"""Retention over a real backlog: bounded batches inside each tick's budget, and what must be kept is kept."""

from __future__ import annotations

import json
import logging
import time
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from crontick.tick import retention
from tests.support.core_jobs import db_now, settings_for, tick
from tests.tick.retention_seed import expired_done_jobs, present, rows_to_keep_and_to_delete

BACKLOG = 1_000_000
BUDGET_SECONDS = 2.0


class Events(logging.Handler):
    """crontick's log lines, parsed (each is one JSON object)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(record.getMessage()))

    def named(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.lines if e["event"] == event]


@pytest.fixture
def events() -> Any:
    handler = Events()
    logger = logging.getLogger("crontick")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def count(conn: psycopg.Connection[Any], sql: str) -> int:
    row = conn.execute(sql).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.slow
def test_a_million_expired_rows_clear_in_bounded_batches_within_each_tick_budget(
    database_url: str, conn: psycopg.Connection[Any], events: Events
) -> None:
    now = db_now(conn)
    expired_done_jobs(conn, BACKLOG, now)
    seeded = rows_to_keep_and_to_delete(conn, now)
    settings = settings_for(database_url, time_budget_seconds=BUDGET_SECONDS)
    walls = []
    ticks_needed = BACKLOG // retention.BATCH_SIZE + 1
    for n in range(ticks_needed + 2):
        began = time.monotonic()
        tick(database_url, settings, now=now + timedelta(seconds=n))
        walls.append(time.monotonic() - began)
    runs = events.named("retention")
    assert all(r["done_jobs"] <= retention.BATCH_SIZE for r in runs)
    assert [r["done_jobs"] for r in runs[: ticks_needed - 1]] == [retention.BATCH_SIZE] * (ticks_needed - 1)
    assert sum(r["done_jobs"] for r in runs) == BACKLOG  # every expired done job, none kept with them
    assert max(walls) < BUDGET_SECONDS, f"slowest tick {max(walls):.2f} s"
    # After the last full batch, the next tick's probe finds nothing expired: no further run.
    assert len(runs) == BACKLOG // retention.BATCH_SIZE
    for table, ids in seeded["keep"].items():
        assert present(conn, table, ids) == sorted(ids), f"{table}: kept rows were deleted"
    for table, ids in seeded["delete"].items():
        assert present(conn, table, ids) == [], f"{table}: expired rows were kept"
    assert count(conn, "select count(*) from jobs where type = 'old.report'") == 0
    print(
        f"retention of {BACKLOG:,} done jobs: {len(runs)} ticks, median tick {sorted(walls)[len(walls) // 2] * 1000:.0f} ms, "
        f"slowest {max(walls) * 1000:.0f} ms, median batch {sorted(r['duration_ms'] for r in runs)[len(runs) // 2]} ms"
    )


def test_retention_runs_only_when_a_probe_finds_expired_rows(
    database_url: str, conn: psycopg.Connection[Any], events: Events
) -> None:
    now = db_now(conn)
    conn.execute(
        "insert into jobs (type, payload, status, updated_at) values ('x', '{}', 'done', %(t)s)",
        {"t": now - timedelta(days=6)},
    )
    tick(database_url, settings_for(database_url), now=now)
    assert events.named("retention") == []
    # The same row is expired under a shorter keep period, but the process looks only once a minute.
    shorter = settings_for(database_url, keep_done_days=5)
    tick(database_url, shorter, now=now + timedelta(seconds=1))
    assert events.named("retention") == []
    tick(database_url, shorter, now=now + timedelta(seconds=retention.PROBE_SECONDS + 1))
    [run] = events.named("retention")
    assert run["done_jobs"] == 1
    # Less than a full batch: the process goes quiet, and later ticks do not even look.
    conn.execute(
        "insert into jobs (type, payload, status, updated_at) values ('x', '{}', 'done', %(t)s)",
        {"t": now - timedelta(days=6)},
    )
    tick(database_url, shorter, now=now + timedelta(seconds=2 * retention.PROBE_SECONDS + 2))
    assert len(events.named("retention")) == 1
    tick(database_url, shorter, now=now + timedelta(seconds=retention.QUIET_SECONDS + 120))
    assert [r["done_jobs"] for r in events.named("retention")] == [1, 1]


@pytest.mark.slow
def test_a_delete_that_outruns_the_budget_is_cut_short_and_the_tick_still_succeeds(
    database_url: str, conn: psycopg.Connection[Any], events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = db_now(conn)
    expired_done_jobs(conn, 3_000, now)
    # Each deleted row costs a millisecond, so the one batch outruns the budget however fast the
    # machine is (300,000 plain rows were once enough, until a quiet machine deleted them in 0.3 s).
    conn.execute(
        "create function t_slow_delete() returns trigger language plpgsql as $$"
        " begin perform pg_sleep(0.001); return old; end $$;"
        " create trigger t_slow_delete before delete on jobs for each row execute function t_slow_delete()"
    )
    monkeypatch.setattr(retention, "BATCH_SIZE", 1_000_000)  # one batch far bigger than the budget allows
    monkeypatch.setattr(retention, "MIN_SECONDS", 0.2)
    budget = 0.6
    began = time.monotonic()
    result = tick(database_url, settings_for(database_url, time_budget_seconds=budget), now=now)
    wall = time.monotonic() - began
    assert result.jobs.claimed == 0
    [stopped] = events.named("retention_stopped")
    assert "outran the tick's budget" in stopped["detail"]
    assert events.named("retention") == []
    assert count(conn, "select count(*) from jobs where status = 'done'") == 3_000  # rolled back whole
    assert wall < budget + 0.5, f"tick took {wall:.2f} s"


def test_cutoffs_follow_the_settings() -> None:
    from datetime import UTC, datetime

    from crontick.settings import Settings

    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    c = retention.cutoffs(Settings(keep_done_days=7, keep_failed_days=30.5), now)
    assert c == {
        "done_before": datetime(2026, 11, 23, 12, tzinfo=UTC),
        "failed_before": datetime(2026, 10, 31, tzinfo=UTC),
        "kept_before": datetime(2026, 10, 31, 12, tzinfo=UTC),
    }
    assert retention.Deleted(done_jobs=retention.BATCH_SIZE).full and not retention.Deleted(ticks=1).full


def test_a_table_of_the_app_referencing_an_expired_job_never_fails_the_tick(
    database_url: str, conn: psycopg.Connection[Any], events: Events
) -> None:
    now = db_now(conn)
    expired_done_jobs(conn, 10, now)
    conn.execute("create table app_audit (job_id bigint references jobs (id))")  # no ON DELETE: it blocks the delete
    conn.execute("insert into app_audit select min(id) from jobs")
    result = tick(database_url, settings_for(database_url), now=now)
    assert result.jobs.claimed == 0
    [error] = events.named("retention_error")
    assert "ForeignKeyViolation" in error["detail"] and "app_audit" in error["detail"]
    assert count(conn, "select count(*) from jobs") == 10  # the whole batch rolled back, nothing half-done
