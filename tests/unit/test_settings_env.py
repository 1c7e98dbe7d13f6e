"""Settings.from_env: defaults, and each bad value failing fast with a message that names the variable."""

from __future__ import annotations

import pytest

from crontick.errors import ConfigError
from crontick.settings import LEASE_MARGIN_SECONDS, MIN_SECRET_CHARS, Settings

GOOD_SECRET = "s" * MIN_SECRET_CHARS


def test_defaults_match_the_contract() -> None:
    s = Settings.from_env({})
    assert (s.batch_size, s.time_budget_seconds) == (100, 8.0)
    assert s.lease_seconds == 8.0 + LEASE_MARGIN_SECONDS
    assert s.cron_secret is None and not s.auth_configured
    assert s.handler_modules == ()


def test_values_are_read_from_the_environment() -> None:
    s = Settings.from_env(
        {
            "DATABASE_URL": " postgresql://u@h/db ",
            "CRON_SECRET": GOOD_SECRET,
            "CRONTICK_BATCH_SIZE": "25",
            "CRONTICK_TIME_BUDGET_SECONDS": "4.5",
            "CRONTICK_HANDLERS": "app.jobs, app.mail ,",
        }
    )
    assert s.database_url == "postgresql://u@h/db"
    assert s.cron_secret == GOOD_SECRET and s.auth_configured
    assert (s.batch_size, s.time_budget_seconds) == (25, 4.5)
    assert s.lease_seconds == 4.5 + LEASE_MARGIN_SECONDS  # the default follows the budget
    assert s.handler_modules == ("app.jobs", "app.mail")


def test_short_cron_secret_fails_with_a_clear_message() -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"CRON_SECRET": "short-secret"})
    message = str(info.value)
    assert message.startswith("CRON_SECRET: expected at least 32 characters, got: 12")
    assert "short-secret" not in message  # the message never echoes the secret itself


def test_secret_of_exactly_the_minimum_length_is_accepted() -> None:
    assert Settings.from_env({"CRON_SECRET": GOOD_SECRET}).cron_secret == GOOD_SECRET


def test_secrets_are_not_in_the_repr() -> None:
    s = Settings.from_env(
        {
            "CRON_SECRET": GOOD_SECRET,
            "QSTASH_CURRENT_SIGNING_KEY": "sig_" + "k" * 20,
            "CRONTICK_PUBLIC_URL": "https://app.example.com",
        }
    )
    assert GOOD_SECRET not in repr(s) and "sig_" not in repr(s)
    assert GOOD_SECRET in s.secrets  # but they are known, so error text can be scrubbed of them


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("CRONTICK_BATCH_SIZE", "lots", "CRONTICK_BATCH_SIZE: expected an integer, got: 'lots'"),
        ("CRONTICK_BATCH_SIZE", "2.5", "CRONTICK_BATCH_SIZE: expected an integer, got: '2.5'"),
        ("CRONTICK_BATCH_SIZE", "0", "CRONTICK_BATCH_SIZE: expected at least 1, got: '0'"),
        ("CRONTICK_TIME_BUDGET_SECONDS", "8s", "CRONTICK_TIME_BUDGET_SECONDS: expected a number, got: '8s'"),
        ("CRONTICK_TIME_BUDGET_SECONDS", "-1", "CRONTICK_TIME_BUDGET_SECONDS: expected at least 0.1, got: '-1'"),
        ("CRONTICK_CONCURRENCY", "0", "CRONTICK_CONCURRENCY: expected at least 1, got: '0'"),
        ("CRONTICK_LEASE_SECONDS", "soon", "CRONTICK_LEASE_SECONDS: expected a number, got: 'soon'"),
    ],
)
def test_bad_numbers_fail_naming_the_variable(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({name: value})
    assert str(info.value) == message


@pytest.mark.parametrize("lease", ["5", "8"])
def test_lease_not_longer_than_the_budget_fails(lease: str) -> None:
    with pytest.raises(
        ConfigError, match=r"^CRONTICK_LEASE_SECONDS: expected more than CRONTICK_TIME_BUDGET_SECONDS \(8\)"
    ):
        Settings.from_env({"CRONTICK_TIME_BUDGET_SECONDS": "8", "CRONTICK_LEASE_SECONDS": lease})


def test_lease_longer_than_the_budget_is_accepted() -> None:
    assert Settings.from_env({"CRONTICK_TIME_BUDGET_SECONDS": "8", "CRONTICK_LEASE_SECONDS": "9"}).lease_seconds == 9.0


def test_a_reminder_channel_that_cannot_be_a_name_fails() -> None:
    """A name of the right form may be a channel the app registers: tests/channels/test_function.py refuses it at start-up."""
    with pytest.raises(ConfigError, match="^CRONTICK_REMINDER_CHANNEL: expected one of console, .*got: 'Pigeon!'"):
        Settings.from_env({"CRONTICK_REMINDER_CHANNEL": "Pigeon!"})


def test_missing_database_url_is_reported_when_required() -> None:
    with pytest.raises(ConfigError, match="^DATABASE_URL: expected a PostgreSQL URL .*got: nothing"):
        Settings.from_env({}).require_database_url()


def test_blank_values_count_as_unset() -> None:
    s = Settings.from_env({"CRON_SECRET": "   ", "CRONTICK_BATCH_SIZE": " "})
    assert s.cron_secret is None and s.batch_size == 100


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "Infinity"])
def test_non_finite_numbers_fail(value: str) -> None:
    with pytest.raises(ConfigError, match=f"^CRONTICK_TIME_BUDGET_SECONDS: expected a finite number, got: '{value}'"):
        Settings.from_env({"CRONTICK_TIME_BUDGET_SECONDS": value})


MALFORMED_URLS = [
    "postgresql://app:hunter2 pass@db.example.com/app",  # unencoded space in the password
    "postgresql://app:hunter2pass@[::1/app",  # unterminated IPv6 host
    "app:hunter2pass@db.example.com/app",  # no scheme: read as key=value and rejected
    "postgresql://app:hunter2pass@db.example.com/app?sslmod=require",  # misspelt parameter
]


@pytest.mark.parametrize("url", MALFORMED_URLS)
def test_malformed_database_url_fails_fast_without_echoing_the_password(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"DATABASE_URL": url})
    message = str(info.value)
    assert message.startswith("DATABASE_URL: expected a PostgreSQL URL")
    assert "hunter2" not in message
    assert info.value.__cause__ is None and info.value.__suppress_context__  # no chained message holds it either


def test_well_formed_database_urls_are_accepted() -> None:
    for url in ("postgresql://app:p%40ss@db.example.com:6543/app?sslmode=require", "host=/tmp dbname=app user=app"):
        assert Settings.from_env({"DATABASE_URL": url}).database_url == url
