"""The table of variables in crontick.settings: each row's bounds, default and secrecy reach from_env, repr and secrets."""

from __future__ import annotations

import dataclasses

import pytest

from crontick.errors import ConfigError
from crontick.settings import MIN_SECRET_CHARS, Settings, Variable, declare_secret, table

FIELD_ROWS = [(field, kind, row) for field, kind, row in table() if field is not None]
BOUNDED = [
    (field, kind, row) for field, kind, row in FIELD_ROWS if kind in ("int", "float") and row.minimum is not None
]
# The lease must also exceed the budget: give it a budget it can be above at its minimum.
AROUND = {"lease_seconds": {"CRONTICK_TIME_BUDGET_SECONDS": "0.5"}}


def test_every_field_is_one_row_with_its_own_variable() -> None:
    assert [f.name for f in dataclasses.fields(Settings)] == [field for field, _, _ in FIELD_ROWS]
    names = [row.name for _, _, row in table()]
    assert len(names) == len(set(names))
    assert all(row.doc.strip() and row.group for _, _, row in table())


def test_defaults_are_the_rows_defaults_whether_read_or_built() -> None:
    assert Settings.from_env({}) == Settings()
    for field, _, row in FIELD_ROWS:
        assert getattr(Settings(), field) == row.default, field


def test_a_default_can_come_from_the_host_or_another_variable() -> None:
    assert Settings.from_env({}).kick == "inline"
    assert Settings.from_env({"AWS_LAMBDA_FUNCTION_NAME": "fn"}).kick == "http"
    assert Settings.from_env({"CRONTICK_TIME_BUDGET_SECONDS": "20"}).lease_seconds == 50.0


@pytest.mark.parametrize(("field", "kind", "row"), BOUNDED, ids=[row.name for _, _, row in BOUNDED])
def test_each_bound_in_the_table_is_enforced(field: str, kind: str, row: Variable) -> None:
    assert row.minimum is not None
    low, high, name = row.minimum, row.maximum, row.name
    env = AROUND.get(field, {})
    text = str(int(low)) if kind == "int" else f"{low:g}"
    assert getattr(Settings.from_env({**env, name: text}), field) == low
    below = str(int(low) - 1) if kind == "int" else f"{low - 0.01:g}"
    with pytest.raises(ConfigError, match=f"^{name}: expected at least {low:g}, got: '{below}'$"):
        Settings.from_env({**env, name: below})
    if high is not None:
        assert getattr(Settings.from_env({**env, name: str(int(high))}), field) == high
        with pytest.raises(ConfigError, match=f"^{name}: expected at most {int(high)}, got: '{int(high) + 1}'$"):
            Settings.from_env({**env, name: str(int(high) + 1)})


def test_an_integer_too_large_for_a_float_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="^CRONTICK_BATCH_SIZE: expected at most 10000"):
        Settings.from_env({"CRONTICK_BATCH_SIZE": "9" * 400})


def test_every_secret_row_is_hidden_from_repr_and_scrubbed() -> None:
    secret_fields = [field for field, kind, row in FIELD_ROWS if row.secret]
    assert {"cron_secret", "admin_secret", "email_api_key", "twilio_auth_token", "alert_webhook_url"} <= set(
        secret_fields
    )
    values = {field: f"secret-of-{field}-" + "x" * MIN_SECRET_CHARS for field in secret_fields}
    s = Settings(**values)  # type: ignore[arg-type]
    for value in values.values():
        assert value not in repr(s) and value in s.secrets
    assert "secret-of" not in repr(s)
    public = {field: f"plain-{field}" for field, kind, row in FIELD_ROWS if not row.secret and kind == "str | None"}
    public.pop("database_url")  # its password is a secret (below)
    assert not set(Settings(**public).secrets) & set(public.values())  # type: ignore[arg-type]


def test_a_short_secret_fails_naming_its_length_not_its_value() -> None:
    for _, _, row in FIELD_ROWS:
        if row.secret and row.minimum:
            with pytest.raises(ConfigError, match=f"^{row.name}: expected at least 32 characters, got: 31 "):
                Settings.from_env({row.name: "q" * 31})


def _own(s: Settings) -> tuple[str, ...]:
    """s.secrets without the hook secrets other tests of this process declared (they count in every Settings)."""
    from crontick.settings import extra_secrets

    return tuple(x for x in s.secrets if x not in extra_secrets.declared)


def test_secrets_hold_the_database_password_in_each_form_longest_first() -> None:
    s = Settings(database_url="postgresql://app:p%40ss-word-1@db/app", cron_secret="c" * 40)
    assert _own(s) == ("c" * 40, "p%40ss-word-1", "p@ss-word-1")
    assert _own(Settings(database_url="host=db password=kv-secret-pw dbname=app")) == ("kv-secret-pw",)
    assert _own(Settings(database_url="postgresql://app@db/app")) == ()
    assert _own(Settings(database_url="postgresql://app:u n@[::1/app")) == ()  # unreadable: nothing to find
    assert _own(Settings(database_url="postgresql://app:pw@db/app")) == ()  # under 4 characters: not scrubbed


def test_declared_secrets_count_in_every_settings() -> None:
    before = Settings()
    declare_secret("declared-" + "d" * 32)
    assert "declared-" + "d" * 32 in before.secrets and "declared-" + "d" * 32 in Settings().secrets


def test_cron_secret_opens_no_admin_role_however_settings_were_built() -> None:
    cron, admin, viewer = "c" * 40, "a" * 40, "v" * 40
    assert Settings(cron_secret=cron, admin_secret=admin, admin_viewer_secret=viewer).admin_roles == {
        "admin": admin,
        "viewer": viewer,
    }
    assert Settings(cron_secret=cron, admin_secret=cron, admin_viewer_secret=viewer).admin_roles == {"viewer": viewer}
    assert Settings(cron_secret=cron, admin_viewer_secret=cron).admin_roles == {}
    assert Settings(admin_secret=admin).admin_roles == {"admin": admin}
    with pytest.raises(ConfigError, match="^CRONTICK_ADMIN_SECRET: expected a secret of its own"):
        Settings.from_env({"CRON_SECRET": cron, "CRONTICK_ADMIN_SECRET": cron})


def test_each_channel_needs_the_rows_that_name_it() -> None:
    needed = {ch: [row.name for _, _, row in FIELD_ROWS if ch in row.needed_by] for ch in ("email", "sms", "webhook")}
    assert needed == {
        "email": ["RESEND_API_KEY", "CRONTICK_EMAIL_FROM"],
        "sms": ["TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", "CRONTICK_SMS_FROM"],
        "webhook": ["CRONTICK_REMINDER_WEBHOOK_URL", "CRONTICK_REMINDER_WEBHOOK_SECRET"],
    }
    with pytest.raises(ConfigError, match="^TWILIO_AUTH_TOKEN: expected your Twilio auth token for the sms channel"):
        Settings.from_env({"CRONTICK_REMINDER_CHANNEL": "sms", "TWILIO_ACCOUNT_SID": "AC1"})
