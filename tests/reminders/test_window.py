"""The reminder rule at its edges: the 24-hour window, cancelled and started bookings, time zones and DST days."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
import pytest

from tests.support.reminders import NOW, Provider, add_bookings, send_of, sends, settings_for, tick

DAY = timedelta(hours=24)


def booking(conn: psycopg.Connection[Any], starts_at: datetime, zone: str = "UTC", status: str = "confirmed") -> int:
    [booking_id] = add_bookings(conn, [("Ada Lovelace", "ada@example.com", "+31612345678", starts_at, zone, status)])
    return booking_id


def sent_texts(provider: Provider) -> list[str]:
    return [r.json["text"] for r in provider.requests]


def test_a_booking_exactly_24_hours_ahead_is_due(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    b = booking(conn, NOW + DAY)
    assert tick(database_url, settings_for(database_url, provider), NOW).reminders.sent == 1
    assert send_of(conn, b)["status"] == "sent"


def test_a_booking_just_past_24_hours_is_not_due_yet(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    b = booking(conn, NOW + DAY + timedelta(seconds=1))
    settings = settings_for(database_url, provider)
    assert tick(database_url, settings, NOW).reminders.sent == 0 and sends(conn) == []
    assert tick(database_url, settings, NOW + timedelta(seconds=1)).reminders.sent == 1
    assert send_of(conn, b)["status"] == "sent" and len(provider.requests) == 1


@pytest.mark.parametrize("offset", [timedelta(0), timedelta(seconds=-1), timedelta(hours=-3)])
def test_a_booking_that_has_started_gets_none(
    offset: timedelta, database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking(conn, NOW + offset)
    assert tick(database_url, settings_for(database_url, provider), NOW).reminders.sent == 0
    assert sends(conn) == [] and provider.requests == []


def test_a_cancelled_booking_gets_none(database_url: str, conn: psycopg.Connection[Any], provider: Provider) -> None:
    booking(conn, NOW + timedelta(hours=2), status="cancelled")
    assert tick(database_url, settings_for(database_url, provider), NOW).reminders.sent == 0
    assert sends(conn) == [] and provider.requests == []


def test_an_unknown_time_zone_falls_back_to_utc_and_says_so(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    b = booking(conn, datetime.fromisoformat("2026-12-01T08:30:00+00:00"), zone="Mars/Olympus_Mons")
    with caplog.at_level(logging.WARNING, logger="crontick"):
        assert tick(database_url, settings_for(database_url, provider), NOW).reminders.sent == 1
    assert sent_texts(provider) == ["Hi Ada, a reminder: your appointment is tomorrow, Tue 1 Dec at 08:30 (UTC)."]
    assert send_of(conn, b)["status"] == "sent"
    warnings = [r.getMessage() for r in caplog.records if "unknown_time_zone" in r.getMessage()]
    assert warnings and f'"booking_id": "{b}"' in warnings[0] and "Mars/Olympus_Mons" in warnings[0]


# (zone, local start, text expected) on the days the clocks change in 2026.
DST_CASES = [
    ("Europe/Amsterdam", "2026-03-29T09:30", "tomorrow, Sun 29 Mar at 09:30 (Amsterdam time)"),  # spring forward
    ("Europe/Amsterdam", "2026-10-25T09:30", "tomorrow, Sun 25 Oct at 09:30 (Amsterdam time)"),  # fall back
    ("America/New_York", "2026-03-08T09:30", "tomorrow, Sun 8 Mar at 09:30 (New York time)"),
    ("America/New_York", "2026-11-01T09:30", "tomorrow, Sun 1 Nov at 09:30 (New York time)"),
    ("America/New_York", "2026-03-08T03:30", "tomorrow, Sun 8 Mar at 03:30 (New York time)"),  # just after the gap
]


@pytest.mark.parametrize(("zone", "local", "expected"), DST_CASES)
def test_on_dst_days_the_window_is_24_real_hours_and_the_time_is_local(
    zone: str, local: str, expected: str, database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    # In UTC: aware arithmetic in the local zone would step wall-clock days (23 or 25 real hours).
    starts_at = datetime.fromisoformat(local).replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)
    b = booking(conn, starts_at, zone=zone)
    settings = settings_for(database_url, provider)
    assert tick(database_url, settings, starts_at - DAY - timedelta(seconds=1)).reminders.sent == 0
    assert tick(database_url, settings, starts_at - DAY).reminders.sent == 1
    assert sent_texts(provider) == [f"Hi Ada, a reminder: your appointment is {expected}."]
    assert send_of(conn, b)["status"] == "sent"


def test_the_repeated_hour_of_a_fall_back_night_renders_each_instant_correctly(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    # 01:30 happens twice in New York on 1 Nov 2026: 05:30 UTC (EDT) and 06:30 UTC (EST).
    first = booking(conn, datetime.fromisoformat("2026-11-01T05:30:00+00:00"), zone="America/New_York")
    second = booking(conn, datetime.fromisoformat("2026-11-01T06:30:00+00:00"), zone="America/New_York")
    settings = settings_for(database_url, provider, reminder_subject="{starts_at}")
    assert tick(database_url, settings, datetime.fromisoformat("2026-10-31T12:00:00+00:00")).reminders.sent == 2
    subjects = {r.key: r.json["subject"] for r in provider.requests}
    assert subjects == {
        f"reminder:{first}:24h": "2026-11-01T01:30:00-04:00",
        f"reminder:{second}:24h": "2026-11-01T01:30:00-05:00",
    }


def test_a_booking_rescheduled_after_its_reminder_gets_no_second_one(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    b = booking(conn, NOW + timedelta(hours=20))
    settings = settings_for(database_url, provider)
    assert tick(database_url, settings, NOW).reminders.sent == 1
    conn.execute("update bookings set starts_at = starts_at + interval '3 days' where id = %s", (b,))
    new_start = NOW + timedelta(hours=20) + timedelta(days=3)
    assert tick(database_url, settings, new_start - timedelta(hours=12)).reminders.sent == 0
    assert len(provider.requests) == 1 and send_of(conn, b)["attempts"] == 1


def test_extra_kinds_are_each_sent_once_and_a_late_booking_gets_only_the_nearest(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    early = booking(conn, NOW + timedelta(hours=5))
    late = booking(conn, NOW + timedelta(minutes=30))
    settings = settings_for(database_url, provider, reminder_kinds=("24h", "1h"))
    assert tick(database_url, settings, NOW).reminders.sent == 2
    assert sorted(provider.keys()) == sorted([f"reminder:{early}:24h", f"reminder:{late}:1h"])

    assert tick(database_url, settings, NOW + timedelta(hours=4)).reminders.sent == 1  # early's 1h window opens
    assert tick(database_url, settings, NOW + timedelta(hours=4, minutes=30)).reminders.sent == 0
    assert sorted(provider.keys()) == sorted([f"reminder:{early}:24h", f"reminder:{late}:1h", f"reminder:{early}:1h"])
    assert {(r["booking_id"], r["kind"]) for r in sends(conn)} == {(early, "24h"), (early, "1h"), (late, "1h")}


def test_the_channel_is_the_first_the_booking_can_receive(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    ids = add_bookings(
        conn,
        [
            ("Has Email", "e@example.com", "+31600000001", NOW + timedelta(hours=2), "UTC", "confirmed"),
            ("Phone Only", None, "+31600000002", NOW + timedelta(hours=3), "UTC", "confirmed"),
            ("Neither", "", None, NOW + timedelta(hours=4), "UTC", "confirmed"),
        ],
    )
    result = tick(database_url, settings_for(database_url, provider, "email,sms"), NOW)
    assert (result.reminders.sent, result.reminders.failed) == (2, 1)
    rows = {r["booking_id"]: r for r in sends(conn)}
    assert [rows[i]["channel"] for i in ids] == ["email", "sms", "email"]
    assert rows[ids[2]]["status"] == "failed"
    assert rows[ids[2]]["last_error"] == f"booking {ids[2]}: expected an email address to send to, got: nothing"
    sid = settings_for(database_url, provider).twilio_account_sid
    assert sorted(r.path for r in provider.requests) == [
        f"/2010-04-01/Accounts/{sid}/Messages.json",
        "/emails",
    ]  # sent concurrently


def test_a_tick_claims_at_most_a_batch_and_reports_more(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    add_bookings(
        conn,
        [
            (f"C{i}", f"c{i}@example.com", None, NOW + timedelta(hours=1, minutes=i), "UTC", "confirmed")
            for i in range(7)
        ],
    )
    settings = settings_for(database_url, provider, batch_size=3)
    results = [tick(database_url, settings, NOW) for _ in range(4)]
    assert [r.reminders.sent for r in results] == [3, 3, 1, 0]
    assert [r.more for r in results] == [True, True, False, False]
    assert len(provider.requests) == 7
