"""The installed app `crontick.django`: its management commands, and system checks that crontick's settings parse and its reminder source reads."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.core import checks


class CrontickConfig(AppConfig):  # type: ignore[misc]  # Django ships no type information
    name = "crontick.django"
    label = "crontick"
    verbose_name = "crontick"

    def ready(self) -> None:
        from crontick.django import mail

        mail.register()  # CRONTICK_REMINDER_CHANNEL=django: reminders through the project's EMAIL_BACKEND
        checks.register(check_settings)
        checks.register(check_reminder_source)


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


def check_reminder_source(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """`manage.py check`: a warning when reminders would stop at the tick (the source is missing, cannot be read,
    or is not the one crontick's migration last ran with). Silent before crontick is migrated, or without a database."""
    import asyncio

    from crontick.db import connect, source
    from crontick.django import conf
    from crontick.errors import CrontickError
    from crontick.reminders import templates

    async def look() -> CrontickError | None:
        settings = conf.settings()
        conn = await connect(settings.require_database_url())
        try:
            names = templates.source_names(settings)  # the templates' variables that must be columns of the source
            return await source.mismatch(conn, settings.reminder_source_parts, settings.schema, names)
        finally:
            await conn.close()

    try:
        found = asyncio.run(look())
    except Exception:  # noqa: BLE001  # no database yet, or crontick.E001: nothing this check can say
        return []
    if found is None:
        return []
    return [
        checks.Warning(
            str(found),
            hint="reminders stop (jobs still run) until it is fixed: create the view (its migration may say "
            "run_before = [('crontick', '0001_initial')]), then manage.py crontick_migrate",
            id="crontick.W001",
        )
    ]
