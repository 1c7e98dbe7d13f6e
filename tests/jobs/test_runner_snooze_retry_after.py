"""Jobs that wait on a provider: crontick.Snooze hands the attempt back (bounded), and Retry-After is honoured."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import psycopg
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

import crontick
from crontick.channels import wire
from crontick.jobs import decision
from crontick.settings import Settings
from tests.support.core_jobs import db_now, job_row, settings_for, tick
from tests.support.reminders import NOW, Provider, add_bookings, send_of
from tests.support.reminders import settings_for as reminder_settings
from tests.support.reminders import tick as reminder_tick

polls: list[int] = []


@crontick.handler("t_snooze.batch")
async def poll_batch(payload: Any, job: crontick.Job) -> None:
    """Plays the poll-until-done pattern: the batch is 'done' on the payload's `ready_after`-th poll."""
    polls.append(job.id)
    if polls.count(job.id) < payload["ready_after"]:
        raise crontick.Snooze(60)


def test_snooze_keeps_the_attempt_and_runs_again_after_the_delay(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    polls.clear()
    job_id = crontick.enqueue(conn, "t_snooze.batch", {"ready_after": 3})
    now = db_now(conn)
    first = tick(database_url, now=now)
    assert (first.jobs.claimed, first.jobs.snoozed, first.jobs.retried, first.jobs.released, first.more) == (
        1,
        1,
        0,
        0,
        False,
    )
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["snoozes"], row["last_error"]) == ("pending", 0, 1, None)
    assert now + timedelta(seconds=60) <= row["run_after"] <= now + timedelta(seconds=65)
    assert tick(database_url, now=now + timedelta(seconds=30)).jobs.claimed == 0  # not before the delay
    assert tick(database_url, now=now + timedelta(seconds=66)).jobs.snoozed == 1
    done = tick(database_url, now=now + timedelta(seconds=132))
    assert done.jobs.succeeded == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["snoozes"]) == ("done", 1, 2)  # three runs, one attempt counted
    assert polls == [job_id] * 3
    summary = conn.execute("select summary from crontick_ticks order by id limit 1").fetchone()[0]  # type: ignore[index]
    assert summary["jobs"]["snoozed"] == 1


def test_snoozes_stop_at_the_maximum_and_then_count_as_failed_attempts(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    polls.clear()
    job_id = crontick.enqueue(conn, "t_snooze.batch", {"ready_after": 10_000}, max_attempts=2)
    conn.execute("update jobs set snoozes = %(n)s where id = %(id)s", {"n": decision.MAX_SNOOZES - 1, "id": job_id})
    now = db_now(conn)
    assert tick(database_url, now=now).jobs.snoozed == 1  # the 100th snooze is still allowed
    assert job_row(conn, job_id)["snoozes"] == decision.MAX_SNOOZES
    over = tick(database_url, now=now + timedelta(seconds=70))
    assert (over.jobs.snoozed, over.jobs.retried) == (0, 1)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["snoozes"]) == ("pending", 1, decision.MAX_SNOOZES)
    assert row["last_error"].startswith(f"SnoozeLimit: job {job_id} (t_snooze.batch) asked to snooze after 100 snoozes")
    tick(database_url, now=row["run_after"] + timedelta(seconds=1))
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("failed", 2)


def test_snooze_seconds_are_checked() -> None:
    with pytest.raises(ValueError, match="expected seconds between 0 and"):
        crontick.Snooze(-1)
    with pytest.raises(ValueError, match="expected seconds between 0 and"):
        crontick.Snooze(10**9)


@pytest.fixture
def allow_loopback_webhooks(database_url: str) -> Settings:
    """The receiver listens on 127.0.0.1, which the webhook job refuses by default (tests/security covers that)."""
    return settings_for(database_url, webhook_deny_private=False)


@pytest.mark.parametrize(
    ("status", "retry_after", "at_least", "at_most"),
    [
        (429, "120", 120, 125),
        (503, "http-date+300", 295, 305),
        (429, "5", 48, 73),  # shorter than the next backoff step (1 min ± 20 %): the backoff wins
        (500, "600", 48, 73),  # only 429 and 503 carry a Retry-After worth waiting for
    ],
    ids=["429-seconds", "503-http-date", "429-short", "500-ignored"],
)
def test_webhook_job_waits_out_retry_after(
    allow_loopback_webhooks: Settings,
    database_url: str,
    conn: psycopg.Connection[Any],
    httpserver: HTTPServer,
    status: int,
    retry_after: str,
    at_least: int,
    at_most: int,
) -> None:
    if retry_after.startswith("http-date"):
        retry_after = format_datetime(datetime.now(UTC) + timedelta(seconds=300), usegmt=True)
    httpserver.expect_request("/hook").respond_with_response(
        Response("slow down", status, headers={"Retry-After": retry_after})
    )
    job_id = crontick.enqueue(conn, "webhook", {"url": httpserver.url_for("/hook"), "json": {}})
    now = db_now(conn)
    assert tick(database_url, allow_loopback_webhooks, now=now).jobs.retried == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert now + timedelta(seconds=at_least) <= row["run_after"] <= now + timedelta(seconds=at_most), (
        row["run_after"] - now
    )


def test_reminder_channel_waits_out_retry_after(
    database_url: str,
    conn: psycopg.Connection[Any],
    provider: Provider,  # noqa: F811 - the fixture imported above
) -> None:
    [booking] = add_bookings(
        conn, [("Ada", "ada@example.com", None, NOW + timedelta(hours=21), "Europe/Amsterdam", "confirmed")]
    )
    provider.behave = lambda r, n: Response(
        json.dumps({"message": "rate limited"}), 429, headers={"Retry-After": "120"}
    )
    assert reminder_tick(database_url, reminder_settings(database_url, provider, "email"), NOW).reminders.retried == 1
    row = send_of(conn, booking)
    assert row["status"] == "failed" and row["next_attempt_at"] >= NOW + timedelta(seconds=120)


def test_retry_after_parsing() -> None:
    now = 1_800_000_000.0
    assert wire.retry_after_seconds("120", now) == 120.0
    assert wire.retry_after_seconds(" 0 ", now) == 0.0
    assert wire.retry_after_seconds("99999999", now) == wire.MAX_RETRY_AFTER_SECONDS
    date = format_datetime(datetime.fromtimestamp(now + 90, UTC), usegmt=True)
    assert wire.retry_after_seconds(date, now) == 90.0
    past = format_datetime(datetime.fromtimestamp(now - 90, UTC), usegmt=True)
    assert wire.retry_after_seconds(past, now) == 0.0
    for junk in (None, "", "soon", "-5", "1.5e3"):
        assert wire.retry_after_seconds(junk, now) is None


def test_after_failure_waits_the_longer_of_backoff_and_retry_after() -> None:
    from crontick import retry

    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    policy = retry.Retry((60.0,), jitter_fraction=0.0)
    assert retry.after_failure(1, 4, policy, now, 0.5, retry_after_seconds=120) == retry.RetryAt(
        now + timedelta(seconds=120)
    )
    assert retry.after_failure(1, 4, policy, now, 0.5, retry_after_seconds=5) == retry.RetryAt(
        now + timedelta(seconds=60)
    )
    assert retry.after_failure(1, 4, policy, now, 0.5) == retry.RetryAt(now + timedelta(seconds=60))
    assert (
        retry.after_failure(4, 4, policy, now, 0.5, retry_after_seconds=120) == retry.GiveUp()
    )  # the last attempt still fails
