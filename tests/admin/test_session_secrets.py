"""The admin's secrets: refused at startup when they cannot open the admin safely, and scrubbed from errors."""

from __future__ import annotations

import pytest

from crontick.errors import ConfigError
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"CRONTICK_ADMIN_SECRET": TEST_SECRET},
            "CRONTICK_ADMIN_SECRET: expected a secret of its own, got the value of CRON_SECRET",
        ),
        ({"CRONTICK_ADMIN_VIEWER_SECRET": TEST_SECRET}, "CRONTICK_ADMIN_VIEWER_SECRET: expected a secret of its own"),
        (
            {"CRONTICK_ADMIN_SECRET": "a" * 40, "CRONTICK_ADMIN_VIEWER_SECRET": "a" * 40},
            "CRONTICK_ADMIN_VIEWER_SECRET: expected a secret other than CRONTICK_ADMIN_SECRET",
        ),
        ({"CRONTICK_ADMIN_SECRET": "short"}, "CRONTICK_ADMIN_SECRET: expected at least 32 characters"),
    ],
)
def test_admin_secrets_are_refused_at_startup(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings.from_env({"CRON_SECRET": TEST_SECRET, **env})


def test_admin_secrets_are_read_and_scrubbed_from_errors() -> None:
    s = Settings.from_env(
        {"CRON_SECRET": TEST_SECRET, "CRONTICK_ADMIN_SECRET": "b" * 40, "CRONTICK_ADMIN_VIEWER_SECRET": "c" * 40}
    )
    assert (s.admin_secret, s.admin_viewer_secret) == ("b" * 40, "c" * 40)
    assert {"b" * 40, "c" * 40} <= set(s.secrets)
    assert "b" * 40 not in repr(s)
