"""`manage.py migrate` runs `crontick migrate` once on the database it migrates, so a fresh or a test database has crontick's schema.

crontick's schema has migrations of its own (sql/migrations, recorded in its own table), which
this runs whole; what a newer crontick adds is applied by `manage.py crontick_migrate`. It
connects to the database Django is migrating (a test database under `manage.py test`), never to
DATABASE_URL. Reversing it changes nothing: `drop schema crontick cascade` removes crontick.

The reminder source (CRONTICK_REMINDER_SOURCE) may be a view that another app's migration creates,
which Django may run after this one (apps without a dependency between them migrate in label
order): a source that is missing or does not match is a warning here, not a failure, and
`manage.py check` and the first tick report it. The view's migration can also say
`run_before = [("crontick", "0001_initial")]` (docs/django.md).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from django.core.management.base import CommandError
from django.db import migrations

from crontick.db.migrate import apply
from crontick.django import conf
from crontick.errors import CrontickError
from crontick.reminders import templates
from crontick.settings import Settings


def install(apps: Any, schema_editor: Any) -> None:
    url = conf.database_url(schema_editor.connection.alias)
    try:
        settings = Settings.from_env({**os.environ, "DATABASE_URL": url})
        asked = settings.reminder_source_parts if settings.reminder_source else None
        names = templates.source_names(settings)  # the reminder templates' variables that must be source columns
        done = asyncio.run(apply(url, settings.schema, asked, source_must_read=False, variables=names))
    except CrontickError as exc:
        raise CommandError(f"crontick: {exc}") from None
    if done.source_problem is not None:
        print(
            f"crontick: warning: {done.source_problem} (fine while a later migration creates it; "
            "manage.py check and the tick report it until then)",
            file=sys.stderr,
        )


class Migration(migrations.Migration):  # type: ignore[misc]  # Django ships no type information
    atomic = False  # crontick migrates on a connection of its own, in one transaction of its own
    dependencies: list[tuple[str, str]] = []
    operations = [migrations.RunPython(install, migrations.RunPython.noop, elidable=False)]
