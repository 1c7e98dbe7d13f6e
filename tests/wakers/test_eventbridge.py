"""CRONTICK_WAKER=eventbridge against ministack: the one-time schedule is created as AWS documents it (at(), UTC,
DELETE after completion, the tick Input), a repeat answers ConflictException and counts as booked, and (slow) the
schedule fires at its minute and invokes crontick.aws.handler as a Lambda, which runs a tick on the test database."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from crontick.settings import Settings
from crontick.wakers.booking import book_next
from crontick.wakers.eventbridge import EventBridge
from tests.support import ministack as aws


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with aws.ministack() as url:
        yield url


def _settings(endpoint: str, database_url: str | None = None, target: str | None = None) -> Settings:
    return Settings(database_url=database_url, waker="eventbridge", aws_region=aws.REGION,
                    eventbridge_target_arn=target or f"arn:aws:lambda:{aws.REGION}:{aws.ACCOUNT}:function:crontick",
                    eventbridge_role_arn=aws.ROLE_ARN, aws_access_key_id="test", aws_secret_access_key="test",
                    aws_session_token="session-token", eventbridge_url=endpoint)  # fmt: skip


def test_the_schedule_is_created_once_per_instant(endpoint: str) -> None:
    provider = EventBridge(_settings(endpoint))
    instant = (datetime.now(UTC) + timedelta(hours=2)).replace(second=0, microsecond=0)
    key = f"crontick-test-{instant:%Y%m%dT%H%M%SZ}"
    first = asyncio.run(provider.book(instant, key, datetime.now(UTC)))
    again = asyncio.run(provider.book(instant, key, datetime.now(UTC)))
    assert not first.duplicate and first.message_id and first.message_id.endswith(f"schedule/default/{key}")
    assert again.duplicate
    schedule = aws.client(endpoint, "scheduler").get_schedule(Name=key)
    assert schedule["ScheduleExpression"] == f"at({instant:%Y-%m-%dT%H:%M:%S})"
    assert schedule["ScheduleExpressionTimezone"] == "UTC"
    assert schedule["ActionAfterCompletion"] == "DELETE"
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}
    # The instant rides in the Input: crontick.aws records it served, and answers a repeat as a duplicate.
    assert json.loads(schedule["Target"]["Input"]) == {"crontick": "tick", "instant": instant.isoformat()}
    assert schedule["Target"]["RoleArn"] == aws.ROLE_ARN


def test_book_next_rounds_up_to_the_minute(endpoint: str, database_url: str) -> None:
    settings = _settings(endpoint, database_url)
    now = datetime(2031, 1, 1, 9, 0, 30, tzinfo=UTC)

    async def booking() -> Any:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            return await book_next(conn, settings, now + timedelta(seconds=45), now)

    outcome = asyncio.run(booking())
    assert outcome.status == "booked" and outcome.instant == datetime(2031, 1, 1, 9, 2, tzinfo=UTC)


def test_a_cancel_deletes_the_schedule_and_a_missing_one_is_no_failure(endpoint: str) -> None:
    """DeleteSchedule (`DELETE /schedules/<name>?groupName=`, SigV4 signed) as AWS documents it; 404 is no failure."""
    provider = EventBridge(_settings(endpoint))
    instant = (datetime.now(UTC) + timedelta(hours=3)).replace(second=0, microsecond=0)
    key = f"crontick-test-cancel-{instant:%Y%m%dT%H%M%SZ}"
    asyncio.run(provider.book(instant, key, datetime.now(UTC)))
    asyncio.run(provider.cancel(key, None))
    asyncio.run(provider.cancel(key, None))  # ResourceNotFoundException now: gone already, no failure
    scheduler = aws.client(endpoint, "scheduler")
    with pytest.raises(scheduler.exceptions.ResourceNotFoundException):
        scheduler.get_schedule(Name=key)


def test_a_superseded_schedule_is_deleted_by_the_next_booking(endpoint: str, database_url: str) -> None:
    settings = _settings(endpoint, database_url)
    now = datetime.now(UTC)

    async def booking(due: datetime) -> Any:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            return await book_next(conn, settings, due, now)

    first = asyncio.run(booking(now + timedelta(minutes=5)))
    second = asyncio.run(booking(now + timedelta(minutes=9)))
    assert (first.status, second.status) == ("booked", "booked")
    names = {s["Name"] for s in aws.client(endpoint, "scheduler").list_schedules()["Schedules"]}
    assert second.message_id.rsplit("/", 1)[1] in names and first.message_id.rsplit("/", 1)[1] not in names


@pytest.mark.slow
def test_the_schedule_fires_at_its_minute_and_runs_a_tick(
    endpoint: str, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    arn = aws.crontick_lambda(endpoint, "crontick-tick", {"DATABASE_URL": database_url})
    settings = _settings(endpoint, database_url, target=arn)
    now = datetime.now(UTC)

    async def booking() -> Any:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
            return await book_next(aconn, settings, now + timedelta(seconds=1), now)

    outcome = asyncio.run(booking())
    assert outcome.status == "booked", outcome
    deadline = time.monotonic() + 150  # the minute, then ministack's 10 s sweep, then the Lambda's cold start
    while time.monotonic() < deadline:
        row = conn.execute("select source, started_at from crontick.crontick_ticks order by id desc limit 1").fetchone()
        if row:
            break
        time.sleep(1)
    assert row is not None, "the schedule never ran a tick"
    assert row[0] == "eventbridge" and row[1] >= outcome.instant
