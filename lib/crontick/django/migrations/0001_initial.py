"""`manage.py migrate` runs `crontick migrate` once on the database it migrates, so a fresh or a test database has crontick's schema.

crontick's schema has migrations of its own (sql/migrations, recorded in its own table), which
this runs whole; what a newer crontick adds is applied by `manage.py crontick_migrate`. It
connects to the database Django is migrating (a test database under `manage.py test`), never to
DATABASE_URL. Reversing it changes nothing: `drop schema crontick cascade` removes crontick.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from django.core.management.base import CommandError
from django.db import migrations

from crontick import db
from crontick.django import conf
from crontick.errors import CrontickError
from crontick.settings import Settings


def install(apps: Any, schema_editor: Any) -> None:
    url = conf.database_url(schema_editor.connection.alias)
    try:
        settings = Settings.from_env({**os.environ, "DATABASE_URL": url})
        asyncio.run(db.migrate(url, settings.schema, settings.reminder_source_parts))
    except CrontickError as exc:
        raise CommandError(f"crontick: {exc}") from None


class Migration(migrations.Migration):  # type: ignore[misc]  # Django ships no type information
    atomic = False  # crontick migrates on a connection of its own, in one transaction of its own
    dependencies: list[tuple[str, str]] = []
    operations = [migrations.RunPython(install, migrations.RunPython.noop, elidable=False)]
