"""`manage.py crontick_tick [--drain]`: `crontick tick` with Django set up, so handlers that use the ORM just work."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand

from crontick.django.management import run


class Command(BaseCommand):  # type: ignore[misc]  # Django ships no type information
    help = (
        "Run one tick in this process and print its JSON summary (the same as POST /api/cron/tick); "
        "--drain keeps ticking until nothing due is left. For a crontab, a Kubernetes CronJob or a Cloud Run job."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--drain", action="store_true", help="keep ticking until nothing due is left")

    def handle(self, *args: Any, **options: Any) -> None:
        run(["tick", "--drain"] if options["drain"] else ["tick"])
