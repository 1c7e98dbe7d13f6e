"""The reminder tables' invariants live in the schema; the `make run` demo seeds bookings whose first tick prints reminders."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from crontick import demo
from crontick.reminders import send
from crontick.settings import REMINDER_CHANNELS, Settings
from crontick.settings.variables import CHANNEL_NAME
from tests.support.reminders import NOW, add_bookings, sends, tick


def check_values(conn: psycopg.Connection[Any], constraint: str) -> set[str]:
    row = conn.execute(
        "select pg_get_constraintdef(oid) from pg_constraint where conname = %s", (constraint,)
    ).fetchone()
    assert row is not None, constraint
    return set(re.findall(r"'(\w+)'::text", row[0]))


def test_python_statuses_and_channels_match_the_database(conn: psycopg.Connection[Any]) -> None:
    assert check_values(conn, "reminder_sends_status_valid") == set(send.STATUSES)
    # Channel names are checked by form (an app registers its own): every built-in one fits, as CHANNEL_NAME says.
    [b] = add_bookings(conn, [("Ada", "a@example.com", None, NOW, "UTC", "confirmed")])
    for kind, name in enumerate([*REMINDER_CHANNELS, "pigeon", "sms-eu_2"]):
        assert CHANNEL_NAME.fullmatch(name)
        conn.execute(
            "insert into reminder_sends (booking_id, kind, channel, status) values (%s, %s, %s, 'failed')",
            (b, f"{kind + 1}h", name),
        )
    assert check_values(conn, "bookings_status_valid") == {"confirmed", "cancelled"}


def test_the_contract_columns_and_defaults(conn: psycopg.Connection[Any]) -> None:
    conn.execute("insert into bookings (customer_name, starts_at) values ('Ada', now())")
    row = conn.execute("select time_zone, status, email, phone from bookings").fetchone()
    assert row == ("UTC", "confirmed", None, None)


def test_a_second_row_for_the_same_booking_and_kind_is_refused(conn: psycopg.Connection[Any]) -> None:
    [b] = add_bookings(conn, [("Ada", "a@example.com", None, NOW, "UTC", "confirmed")])
    insert = "insert into reminder_sends (booking_id, kind, channel, locked_until) values (%s, '24h', 'email', now())"
    conn.execute(insert, (b,))
    with pytest.raises(psycopg.errors.UniqueViolation, match="reminder_sends_booking_kind_unique"):
        conn.execute(insert, (b,))
    row = conn.execute("select idempotency_key, status, attempts from reminder_sends").fetchone()
    assert row == (f"reminder:{b}:24h", "sending", 1)


@pytest.mark.parametrize(
    ("columns", "constraint"),
    [
        ("status, locked_until) values (%s, '24h', 'email', 'sending', null)", "reminder_sends_sending_has_lease"),
        ("status, sent_at) values (%s, '24h', 'email', 'sent', null)", "reminder_sends_sent_has_time"),
        (
            "status, next_attempt_at) values (%s, '24h', 'email', 'unknown', now())",
            "reminder_sends_retry_only_when_failed",
        ),
        ("status) values (%s, '24h', 'Pigeon!', 'failed')", "reminder_sends_channel_valid"),
        ("status) values (%s, '24h', 'email', 'lost')", "reminder_sends_status_valid"),
    ],
)
def test_named_checks_guard_the_states(columns: str, constraint: str, conn: psycopg.Connection[Any]) -> None:
    [b] = add_bookings(conn, [("Ada", "a@example.com", None, NOW, "UTC", "confirmed")])
    with pytest.raises(psycopg.errors.CheckViolation, match=constraint):
        conn.execute("insert into reminder_sends (booking_id, kind, channel, " + columns, (b,))


def test_demo_seed_is_idempotent_and_its_first_tick_prints_reminders(
    database_url: str, conn: psycopg.Connection[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    demo.seed(database_url)
    demo.seed(database_url)
    assert conn.execute("select count(*) from bookings").fetchone() == (len(demo.DEMO_BOOKINGS),)
    zones = {z for (z,) in conn.execute("select distinct time_zone from bookings")}
    assert len(zones) >= 4

    now = conn.execute("select now()").fetchone()[0]  # type: ignore[index]
    result = tick(database_url, Settings(database_url=database_url), now + timedelta(seconds=1))
    assert result.reminders.sent == 4  # the four confirmed ones due within 24 hours; not the cancelled or later one
    out = capsys.readouterr().out
    assert out.count("-" * 79) == 4
    assert "(Amsterdam time)" in out and "(Tokyo time)" in out and "(New York time)" in out and "(Auckland time)" in out
    assert "To: +12025550143" in out  # reachable by phone only
    assert "Tom Baker" not in out and "Priya" not in out
    assert {r["status"] for r in sends(conn)} == {"sent"}
