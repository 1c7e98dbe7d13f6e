"""start_by on every enqueue path (crontick.enqueue, enqueue_many, the SQL crontick.enqueue, a debounce): stored as a
time, seconds counted from the database's clock; bad values refused with a clear error before any statement."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

import crontick
from crontick.errors import CrontickError
from tests.support.core_jobs import job_row


def _start_by(conn: psycopg.Connection[Any], job_id: int) -> datetime:
    value: datetime = job_row(conn, job_id)["start_by"]
    return value


def test_start_by_as_a_time_or_as_seconds_from_the_databases_clock(conn: psycopg.Connection[Any]) -> None:
    at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert _start_by(conn, crontick.enqueue(conn, "t_sb.a", {}, start_by=at)) == at
    with conn.transaction():  # one transaction: now() is the same for the enqueue and the check
        job_id = crontick.enqueue(conn, "t_sb.a", {}, start_by=600)
        assert conn.execute("select now() + interval '600 seconds'").fetchone() == (_start_by(conn, job_id),)
    assert job_row(conn, crontick.enqueue(conn, "t_sb.a", {}))["start_by"] is None


def test_enqueue_many_gives_every_job_the_start_by(conn: psycopg.Connection[Any]) -> None:
    at = datetime(2030, 1, 2, tzinfo=UTC)
    plain = crontick.enqueue_many(conn, [("t_sb.a", {}), ("t_sb.b", {})], start_by=at)
    keyed = crontick.enqueue_many(conn, [("t_sb.a", {}, "k1"), ("t_sb.b", {})], start_by=90.5)
    assert [_start_by(conn, i) for i in plain] == [at, at]
    first, second = (_start_by(conn, i) for i in keyed)
    assert first == second and first > datetime.now(UTC)
    assert job_row(conn, crontick.enqueue_many(conn, [("t_sb.a", {})])[0])["start_by"] is None


def test_the_sql_function_takes_start_by_and_old_calls_still_work(conn: psycopg.Connection[Any]) -> None:
    row = conn.execute(
        "select crontick.enqueue('t_sb.sql', '{}', start_by => '2030-01-02T00:00:00Z'), crontick.enqueue('t_sb.old'),"
        " crontick.enqueue('t_sb.old', '{}', null, 2, 'k')"
    ).fetchone()
    assert row is not None
    assert _start_by(conn, row[0]) == datetime(2030, 1, 2, tzinfo=UTC)
    assert job_row(conn, row[2])["max_attempts"] == 2 and job_row(conn, row[1])["start_by"] is None
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="expected run_after at or before start_by"):
        conn.execute(
            "select crontick.enqueue('t_sb.sql', '{}', run_after => now() + interval '1 hour', start_by => now())"
        )


def test_a_debounced_merge_takes_the_newest_start_by(conn: psycopg.Connection[Any]) -> None:
    first = crontick.enqueue(conn, "t_sb.d", {"n": 1}, debounce=crontick.Debounce("conv", 5), start_by=60)
    at = datetime(2030, 1, 2, tzinfo=UTC)
    assert crontick.enqueue(conn, "t_sb.d", {"n": 2}, debounce=crontick.Debounce("conv", 5), start_by=at) == first
    assert _start_by(conn, first) == at


@pytest.mark.parametrize(
    ("start_by", "says"),
    [
        (datetime(2030, 1, 1), "expected a timezone-aware start_by, got naive"),
        (0, "expected start_by as a timezone-aware datetime or seconds from now"),
        (-5, "expected start_by as a timezone-aware datetime or seconds from now"),
        (math.nan, "expected start_by as a timezone-aware datetime or seconds from now"),
        (True, "expected start_by as a timezone-aware datetime or seconds from now"),
        ("600", "expected start_by as a timezone-aware datetime or seconds from now"),
        (10**9, "at most 31536000"),
    ],
)
def test_a_bad_start_by_is_refused_saying_what_was_expected(
    conn: psycopg.Connection[Any], start_by: Any, says: str
) -> None:
    with pytest.raises(CrontickError, match=says):
        crontick.enqueue(conn, "t_sb.a", {}, start_by=start_by)
    with pytest.raises(CrontickError, match=says):
        crontick.enqueue_many(conn, [("t_sb.a", {})], start_by=start_by)
    assert conn.execute("select count(*) from jobs").fetchone() == (0,)


def test_a_start_by_before_run_after_is_refused(conn: psycopg.Connection[Any]) -> None:
    at = datetime(2030, 1, 2, tzinfo=UTC)
    with pytest.raises(CrontickError, match=r"enqueue\('t_sb.a'\): expected run_after at or before start_by"):
        crontick.enqueue(conn, "t_sb.a", {}, run_after=at, start_by=at - timedelta(seconds=1))
