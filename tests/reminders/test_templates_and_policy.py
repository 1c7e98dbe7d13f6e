"""Pure parts of reminders, without a database: settings checks, templates, rendering, the retry decision."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from crontick.errors import ConfigError
from crontick.reminders import send
from crontick.reminders.send import Claimed, Failure
from crontick.settings import REMINDER_TEMPLATE_VARIABLES, Settings, kind_lead
from tests.support.reminders import NOW, WEBHOOK_SECRET

EMAIL_ENV = {"CRONTICK_REMINDER_CHANNEL": "email", "RESEND_API_KEY": "re_x", "CRONTICK_EMAIL_FROM": "a@b.example"}


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"CRONTICK_REMINDER_CHANNEL": "email", "CRONTICK_EMAIL_FROM": "a@b.example"}, "RESEND_API_KEY"),
        ({"CRONTICK_REMINDER_CHANNEL": "email", "RESEND_API_KEY": "re_x"}, "CRONTICK_EMAIL_FROM"),
        (
            {"CRONTICK_REMINDER_CHANNEL": "sms", "TWILIO_AUTH_TOKEN": "t", "CRONTICK_SMS_FROM": "+1"},
            "TWILIO_ACCOUNT_SID",
        ),
        (
            {"CRONTICK_REMINDER_CHANNEL": "sms", "TWILIO_ACCOUNT_SID": "AC1", "CRONTICK_SMS_FROM": "+1"},
            "TWILIO_AUTH_TOKEN",
        ),
        (
            {"CRONTICK_REMINDER_CHANNEL": "whatsapp", "TWILIO_ACCOUNT_SID": "AC1", "TWILIO_AUTH_TOKEN": "t"},
            "CRONTICK_WHATSAPP_FROM",
        ),
        (
            {"CRONTICK_REMINDER_CHANNEL": "webhook", "CRONTICK_REMINDER_WEBHOOK_SECRET": WEBHOOK_SECRET},
            "CRONTICK_REMINDER_WEBHOOK_URL",
        ),
        (
            {"CRONTICK_REMINDER_CHANNEL": "webhook", "CRONTICK_REMINDER_WEBHOOK_URL": "https://h.example/r"},
            "CRONTICK_REMINDER_WEBHOOK_SECRET",
        ),
        (
            {
                "CRONTICK_REMINDER_CHANNEL": "email,sms",
                **{k: v for k, v in EMAIL_ENV.items() if k != "CRONTICK_REMINDER_CHANNEL"},
            },
            "TWILIO_ACCOUNT_SID",
        ),
    ],
)
def test_a_missing_credential_for_the_configured_channel_fails_at_startup(env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env)
    assert str(info.value).startswith(f"{variable}: expected ")
    assert str(info.value).endswith("channel, got: nothing")


def test_a_complete_channel_configuration_is_accepted() -> None:
    s = Settings.from_env({**EMAIL_ENV, "CRONTICK_REMINDER_KINDS": "24h, 1h", "CRONTICK_DELIVERY_TIMEOUT_SECONDS": "3"})
    assert s.reminder_channels == ("email",)
    assert s.reminder_leads == (("24h", timedelta(hours=24)), ("1h", timedelta(hours=1)))
    assert s.delivery_timeout_seconds == 3.0
    assert "re_x" in s.secrets and "re_x" not in repr(s)


def test_console_needs_nothing() -> None:
    assert Settings.from_env({}).reminder_channels == ("console",)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"CRONTICK_REMINDER_KINDS": "tomorrow"},
            "CRONTICK_REMINDER_KINDS: expected a reminder kind such as 24h, 90m or 2d, got: 'tomorrow'",
        ),
        (
            {"CRONTICK_REMINDER_KINDS": "24h,1d"},
            "CRONTICK_REMINDER_KINDS: expected kinds with different offsets, got: '24h,1d'",
        ),
        (
            {
                "CRONTICK_REMINDER_CHANNEL": "email,email",
                **{k: v for k, v in EMAIL_ENV.items() if k != "CRONTICK_REMINDER_CHANNEL"},
            },
            "CRONTICK_REMINDER_CHANNEL: expected each channel once, got: 'email,email'",
        ),
        (
            {"CRONTICK_REMINDER_TEMPLATE": "Hi {name[0]}"},
            "CRONTICK_REMINDER_TEMPLATE: expected variables among {customer_name}, ",
        ),
        (
            {"CRONTICK_REMINDER_SUBJECT": "{customer_name.__class__}"},
            "CRONTICK_REMINDER_SUBJECT: expected variables among ",
        ),
        ({"CRONTICK_REMINDER_SUBJECT": "{time:{kind}}"}, "CRONTICK_REMINDER_SUBJECT: expected variables among "),
        ({"CRONTICK_REMINDER_TEMPLATE": "Hi {"}, "CRONTICK_REMINDER_TEMPLATE: expected a template such as "),
        (
            {"CRONTICK_EMAIL_API_URL": "api.resend.com"},
            "CRONTICK_EMAIL_API_URL: expected an http:// or https:// URL, got: 'api.resend.com'",
        ),
        (
            {
                "CRONTICK_REMINDER_CHANNEL": "webhook",
                "CRONTICK_REMINDER_WEBHOOK_URL": "https://h.example/r",
                "CRONTICK_REMINDER_WEBHOOK_SECRET": "whsec_not base64!",
            },
            "CRONTICK_REMINDER_WEBHOOK_SECRET: expected whsec_ followed by base64",
        ),
        (
            {"CRONTICK_DELIVERY_TIMEOUT_SECONDS": "0"},
            "CRONTICK_DELIVERY_TIMEOUT_SECONDS: expected at least 0.1, got: '0'",
        ),
    ],
)
def test_bad_reminder_settings_fail_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env)
    assert str(info.value).startswith(message)
    assert "not base64" not in str(info.value)  # a secret is never echoed


@pytest.mark.parametrize(
    ("kind", "lead"), [("24h", timedelta(hours=24)), ("90m", timedelta(minutes=90)), ("2d", timedelta(days=2))]
)
def test_kinds_name_their_offset(kind: str, lead: timedelta) -> None:
    assert kind_lead(kind) == lead


def claimed(**changes: Any) -> Claimed:
    values: dict[str, Any] = {
        "id": 7,
        "booking_id": 42,
        "kind": "24h",
        "channel": "email",
        "status": "sending",
        "attempts": 1,
        "max_attempts": 4,
        "maybe_delivered": False,
        "idempotency_key": "reminder:42:24h",
        "created_at": NOW,
        "customer_name": "  Ada  King Lovelace ",
        "email": "ada@example.com",
        "phone": "+31612345678",
        "starts_at": datetime.fromisoformat("2026-12-01T08:30:00+00:00"),
        "time_zone": "Europe/Amsterdam",
    }
    values.update(changes)
    return Claimed(**values)


def test_every_documented_template_variable_is_rendered() -> None:
    variables = send.template_variables(claimed(), NOW)
    assert set(variables) == set(REMINDER_TEMPLATE_VARIABLES)
    assert variables == {
        "customer_name": "Ada  King Lovelace",
        "first_name": "Ada",
        "booking_id": "42",
        "kind": "24h",
        "day": "tomorrow",
        "date": "Tue 1 Dec",
        "time": "09:30",
        "zone": "Amsterdam time",
        "time_zone": "Europe/Amsterdam",
        "starts_at": "2026-12-01T09:30:00+01:00",
        "starts_at_utc": "2026-12-01T08:30:00+00:00",
    }


@pytest.mark.parametrize(
    ("starts_at", "zone", "day"),
    [
        ("2026-11-30T22:59:00+00:00", "Europe/Amsterdam", "today"),  # 23:59 local, same day
        ("2026-11-30T23:00:00+00:00", "Europe/Amsterdam", "tomorrow"),  # 00:00 local, next day
        (
            "2026-12-01T09:00:00+00:00",
            "Pacific/Kiritimati",
            "today",
        ),  # UTC+14: 1 Dec 02:00 at NOW, start 23:00 (UTC says tomorrow)
        ("2026-12-02T12:00:00+00:00", "UTC", "in 2 days"),
    ],
)
def test_today_and_tomorrow_are_counted_in_the_bookings_zone(starts_at: str, zone: str, day: str) -> None:
    c = claimed(starts_at=datetime.fromisoformat(starts_at), time_zone=zone)
    assert send.template_variables(c, NOW)["day"] == day


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("Europe/Amsterdam", "Amsterdam time"),
        ("America/Argentina/Buenos_Aires", "Buenos Aires time"),
        ("UTC", "UTC"),
        ("Etc/UTC", "UTC"),
    ],
)
def test_zone_labels(key: str, label: str) -> None:
    assert send.zone_label(key) == label


def test_templates_can_be_overridden() -> None:
    settings = Settings(
        reminder_subject="{kind} reminder #{booking_id}",
        reminder_template="{{Clinic}} {customer_name}: {date} {time} {zone}",
    )
    message = send.render(claimed(), "sms", settings)
    assert (message.subject, message.text, message.to) == (
        "24h reminder #42",
        "{Clinic} Ada  King Lovelace: Tue 1 Dec 09:30 Amsterdam time",
        "+31612345678",
    )


@pytest.mark.parametrize(
    ("kind", "channel", "attempts", "maybe_delivered", "status", "retry"),
    [
        ("permanent", "email", 1, False, "failed", False),
        ("definite", "sms", 1, False, "failed", True),
        ("definite", "sms", 4, False, "failed", False),
        ("definite", "email", 4, True, "unknown", False),  # an earlier attempt may have delivered it
        ("permanent", "webhook", 2, True, "unknown", False),
        ("ambiguous", "email", 1, False, "failed", True),  # the provider honours the key: retrying cannot deliver twice
        ("ambiguous", "webhook", 3, False, "failed", True),
        ("ambiguous", "console", 1, False, "failed", True),
        ("ambiguous", "email", 4, False, "unknown", False),
        ("ambiguous", "sms", 1, False, "unknown", False),  # no key: never resent
        ("ambiguous", "whatsapp", 1, False, "unknown", False),
    ],
)
def test_the_retry_decision(
    kind: str, channel: str, attempts: int, maybe_delivered: bool, status: str, retry: bool
) -> None:
    c = claimed(attempts=attempts, channel=channel, maybe_delivered=maybe_delivered)
    outcome = send.decide(c, Failure(kind, "boom"), NOW, 0.5)
    assert outcome.status == status and (outcome.next_attempt_at is not None) == retry
    assert outcome.ambiguous == (kind == "ambiguous")
    if retry:
        assert outcome.next_attempt_at == NOW + timedelta(seconds=[60, 300, 1800][attempts - 1])
    assert outcome.last_error is not None and outcome.last_error.startswith("boom")
