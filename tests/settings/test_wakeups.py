"""The wake-up rows of Settings: CRONTICK_WAKER's values, the grace's bound, and a one-line error naming the first
variable a waker is missing."""

from __future__ import annotations

import pytest

from crontick.errors import ConfigError
from crontick.settings import Settings

QSTASH = {"CRONTICK_WAKER": "qstash", "CRONTICK_PUBLIC_URL": "https://app.example.com", "QSTASH_TOKEN": "token",
          "QSTASH_CURRENT_SIGNING_KEY": "sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r"}  # fmt: skip
EVENTBRIDGE = {"CRONTICK_WAKER": "eventbridge", "AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKID",
               "AWS_SECRET_ACCESS_KEY": "secret",
               "CRONTICK_EVENTBRIDGE_TARGET_ARN": "arn:aws:lambda:eu-west-1:123456789012:function:app",
               "CRONTICK_EVENTBRIDGE_ROLE_ARN": "arn:aws:iam::123456789012:role/scheduler"}  # fmt: skip
CLOUDTASKS = {"CRONTICK_WAKER": "cloudtasks", "CRONTICK_PUBLIC_URL": "https://app.example.com",
              "CRONTICK_CLOUDTASKS_PROJECT": "p", "CRONTICK_CLOUDTASKS_LOCATION": "europe-west1",
              "CRONTICK_CLOUDTASKS_QUEUE": "q", "CRONTICK_CLOUDTASKS_SERVICE_ACCOUNT": "t@p.iam.gserviceaccount.com",
              "CRONTICK_GOOGLE_OIDC_EMAILS": "t@p.iam.gserviceaccount.com",
              "CRONTICK_GOOGLE_OIDC_AUDIENCE": "https://app.example.com/api/cron/tick"}  # fmt: skip
VERCEL = {"CRONTICK_WAKER": "vercel-queue", "VERCEL_QUEUE_TOKEN": "token"}


def test_defaults() -> None:
    settings = Settings.from_env({})
    assert settings.waker == "none" and settings.wakeup_grace_seconds == 300
    assert settings.qstash_url == "https://qstash.upstash.io"


@pytest.mark.parametrize(
    "env", [QSTASH, EVENTBRIDGE, CLOUDTASKS, VERCEL, {**VERCEL, "VERCEL_QUEUE_TOKEN": "", "VERCEL_OIDC_TOKEN": "oidc"}]
)
def test_each_waker_starts_with_its_variables(env: dict[str, str]) -> None:
    assert Settings.from_env(env).waker == env["CRONTICK_WAKER"]


@pytest.mark.parametrize(
    ("env", "missing"),
    [(QSTASH, name) for name in QSTASH if name != "CRONTICK_WAKER"]
    + [(EVENTBRIDGE, name) for name in EVENTBRIDGE if name != "CRONTICK_WAKER"]
    + [(CLOUDTASKS, name) for name in CLOUDTASKS if name not in ("CRONTICK_WAKER", "CRONTICK_GOOGLE_OIDC_AUDIENCE")]
    + [(VERCEL, "VERCEL_QUEUE_TOKEN")],
)
def test_a_missing_variable_is_named(env: dict[str, str], missing: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({k: v for k, v in env.items() if k != missing})
    message = str(raised.value)
    assert message.startswith(f"{missing}: expected") and "\n" not in message
    # QStash's signing key already asks for the public URL (the deliveries are verified with it).
    assert f"CRONTICK_WAKER={env['CRONTICK_WAKER']}" in message or "because QSTASH_CURRENT_SIGNING_KEY" in message


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"CRONTICK_WAKER": "sqs"},
            "CRONTICK_WAKER: expected one of none, qstash, eventbridge, cloudtasks, vercel-queue",
        ),
        ({"CRONTICK_WAKEUP_GRACE_SECONDS": "0"}, "CRONTICK_WAKEUP_GRACE_SECONDS: expected at least 1"),
        ({"QSTASH_URL": "qstash.upstash.io"}, "QSTASH_URL: expected an http:// or https:// URL"),
    ],
)
def test_bad_values_fail_at_startup(env: dict[str, str], expected: str) -> None:
    with pytest.raises(ConfigError, match=f"^{expected}"):
        Settings.from_env(env)


def test_the_tokens_are_secrets() -> None:
    settings = Settings.from_env({**QSTASH, "QSTASH_TOKEN": "qstash-token-value", "VERCEL_QUEUE_TOKEN": "vq-token-x",
                                  "AWS_SECRET_ACCESS_KEY": "aws-secret-value"})  # fmt: skip
    assert {"qstash-token-value", "vq-token-x", "aws-secret-value"} <= set(settings.secrets)
    assert "qstash-token-value" not in repr(settings)
