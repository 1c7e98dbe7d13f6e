"""Channels an app registers with @crontick.reminder_channel: sync or async, the message they get, and their
exceptions read like a handler's (PermanentError fails at once, anything else is retried)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest

import crontick
from crontick.channels import function
from crontick.errors import ConfigError
from crontick.runtime import Runtime
from crontick.settings import Settings
from tests.channels.sending import TEXT
from tests.support.reminders import NOW, add_bookings, make_settings, send_of, settings_values, tick

received: list[crontick.ReminderMessage] = []


@pytest.fixture(autouse=True)
def registered_here(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(function, "_registered", dict(function._registered))
    received.clear()
    yield


def book(conn: psycopg.Connection[Any], email: str | None = "zoe@example.com") -> str:
    [booking] = add_bookings(
        conn,
        [
            (
                "Zoë Ångström",
                email,
                "+31612345678",
                NOW + timedelta(hours=20, minutes=30),
                "Europe/Amsterdam",
                "confirmed",
            )
        ],
    )
    return booking


def run(database_url: str, channel: str, **changes: Any) -> Any:
    return tick(
        database_url, make_settings(settings_values(database_url, "http://127.0.0.1:9", channel, **changes)), NOW
    )


def test_an_async_function_gets_the_message_and_its_answer_is_kept_as_the_provider_id(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    @crontick.reminder_channel("postmark")
    async def postmark(message: crontick.ReminderMessage) -> str:
        received.append(message)
        return "pm-123"

    booking = book(conn)
    assert run(database_url, "postmark", reminder_html_template="<b>{{ first_name }}</b>").reminders.sent == 1
    [message] = received
    assert (message.to, message.text, message.html) == ("zoe@example.com", TEXT, "<b>Zoë</b>")
    assert message.idempotency_key == f"reminder:{booking}:24h"
    assert message.data["data"]["booking"]["id"] == booking
    row = send_of(conn, booking)
    assert (row["channel"], row["status"], row["provider_message_id"]) == ("postmark", "sent", "pm-123")


def test_a_sync_function_runs_and_its_exceptions_read_like_a_handlers(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    outcomes: list[Exception | None] = [ValueError("provider said no"), crontick.PermanentError("unsubscribed")]

    @crontick.reminder_channel("sms_gateway", to="phone")
    def gateway(message: crontick.ReminderMessage) -> None:
        received.append(message)
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    booking = book(conn, email=None)
    assert run(database_url, "sms_gateway").reminders.retried == 1  # any exception: retried with backoff
    row = send_of(conn, booking)
    assert row["next_attempt_at"] is not None and "ValueError: provider said no" in row["last_error"]
    assert received[0].to == "+31612345678"
    assert run(database_url, "sms_gateway").reminders.sent == 0  # its retry is not due yet
    conn.execute("update reminder_sends set next_attempt_at = %s", (NOW,))
    assert (
        tick(
            database_url,
            make_settings(settings_values(database_url, "http://127.0.0.1:9", "sms_gateway")),
            NOW + timedelta(minutes=1),
        ).reminders.failed
        == 1
    )
    row = send_of(conn, booking)
    assert (row["status"], row["next_attempt_at"]) == ("failed", None) and "unsubscribed" in row["last_error"]


def test_a_channel_that_needs_an_email_is_skipped_for_a_booking_without_one(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    @crontick.reminder_channel("mailer")
    def mailer(message: crontick.ReminderMessage) -> None:
        received.append(message)

    booking = book(conn, email=None)
    assert run(database_url, "mailer,console").reminders.sent == 1
    assert received == [] and send_of(conn, booking)["channel"] == "console"


def test_an_unregistered_name_fails_at_start_up_and_a_builtin_name_cannot_be_taken() -> None:
    with pytest.raises(ConfigError, match=r"^CRONTICK_REMINDER_CHANNEL: expected a channel among .* got: 'pigeon'$"):
        Runtime(
            Settings.from_env({"CRONTICK_REMINDER_CHANNEL": "pigeon", "DATABASE_URL": "postgresql:///x"}), strict=True
        )
    with pytest.raises(ConfigError, match="other than console, email, smtp"):
        crontick.reminder_channel("email")(lambda message: None)
