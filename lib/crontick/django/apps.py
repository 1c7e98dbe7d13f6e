"""The installed app `crontick.django`: its management commands, and a system check that crontick's settings parse."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.core import checks


class CrontickConfig(AppConfig):  # type: ignore[misc]  # Django ships no type information
    name = "crontick.django"
    label = "crontick"
    verbose_name = "crontick"

    def ready(self) -> None:
        checks.register(check_settings)


def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """`manage.py check` (and every command that runs checks): crontick's environment and database, without connecting."""
    from crontick.django import conf
    from crontick.errors import ConfigError

    try:
        conf.settings()
    except ConfigError as exc:
        return [
            checks.Error(
                str(exc),
                hint="crontick reads its environment, and DATABASES['default'] when DATABASE_URL is unset",
                id="crontick.E001",
            )
        ]
    return []
