"""`manage.py crontick_migrate [--sql [--after VERSION]] [--reminder-source SCHEMA.NAME]`: `crontick migrate` on Django's database (crontick's own schema only)."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand

from crontick.django.management import run


class Command(BaseCommand):  # type: ignore[misc]  # Django ships no type information
    help = (
        "Create or update crontick's tables and functions in its own schema (CRONTICK_SCHEMA, default crontick) "
        "of Django's default database, or of DATABASE_URL when it is set."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--sql", action="store_true", help="print the SQL instead of running it (no database needed)"
        )
        parser.add_argument(
            "--after", metavar="VERSION", help="with --sql: only what comes after this migration, e.g. 0010"
        )
        parser.add_argument(
            "--reminder-source",
            metavar="SCHEMA.NAME",
            help="the table or view reminders are read from, instead of CRONTICK_REMINDER_SOURCE (crontick migrate's)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        argv = ["migrate"]
        if options["sql"]:
            argv.append("--sql")
        if options["after"]:
            argv += ["--after", options["after"]]
        if options["reminder_source"]:
            argv += ["--reminder-source", options["reminder_source"]]
        run(argv)
