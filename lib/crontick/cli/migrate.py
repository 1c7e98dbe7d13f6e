"""`crontick migrate`: apply crontick's schema, or print it (--sql), and say what changed about the reminder source."""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Mapping

from crontick import db
from crontick.db.migrate import Migrated, apply
from crontick.errors import ConfigError
from crontick.settings import Settings
from crontick.settings.source import source_parts


def _version(text: str) -> str:
    """A migration named by its number (0010) or its whole name (0010_attempt_in_job_row)."""
    matches = [v for v, _ in db.migration_files() if v == text or v.split("_")[0] == text]
    return matches[0] if matches else text  # unknown: db.migrate.script says what it expected


def _source_from_env(env: Mapping[str, str] | None) -> tuple[str, str] | None:
    """CRONTICK_REMINDER_SOURCE for `migrate --sql`, which reads no other setting (None: crontick's own bookings)."""
    value = (os.environ if env is None else env).get("CRONTICK_REMINDER_SOURCE", "").strip()
    return source_parts(value) if value else None


def cmd_migrate(args: argparse.Namespace) -> int:
    if args.sql or args.after:
        if not args.sql:
            raise ConfigError(
                "migrate --after: expected --sql with it (without --sql, migrate applies what is pending)"
            )
        from crontick.db.migrate import script

        after = _version(args.after) if args.after else None
        print(script(db.schema.from_env(args.env), after, _source_from_env(args.env)), end="")
        return 0
    settings = Settings.from_env(args.env)
    asked = args.reminder_source or asked_source(settings)
    url = settings.require_database_url()
    done = asyncio.run(apply(url, settings.schema, asked, variables=template_columns(settings)))
    print(f"applied: {', '.join(done.applied)}" if done.applied else "up to date")
    change = source_change(done, settings.schema)
    if change:
        print(change)
    return 0


def template_columns(settings: Settings) -> frozenset[str]:
    """The reminder templates' variables that must be columns of the source: those of CRONTICK_REMINDER_* and of the
    templates CRONTICK_HANDLERS' modules declare (imported here for that)."""
    from crontick.jobs import registry
    from crontick.reminders import templates

    registry.load_modules(settings.handler_modules)
    return templates.source_names(settings)


def asked_source(settings: Settings) -> tuple[str, str] | None:
    """The reminder source a migrate is asked for: CRONTICK_REMINDER_SOURCE's, None when it is unset (keep the installed one)."""
    return settings.reminder_source_parts if settings.reminder_source else None


def source_change(done: Migrated, schema: str) -> str | None:
    """The line a migrate prints when it switched the reminder source, or kept one it was not given; else None."""
    if done.source_was is not None:
        return f"reminder source: switched from {done.source_was} to {done.source}"
    if done.source_kept:
        return (
            f"reminder source: kept {done.source} (CRONTICK_REMINDER_SOURCE is not set here; to read crontick's own "
            f"table again: crontick migrate --reminder-source {db.schema.source_label((schema, 'bookings'))})"
        )
    return None


def source_option(text: str) -> tuple[str, str]:
    try:
        return source_parts(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("CRONTICK_REMINDER_SOURCE: ")) from None
