"""`crontick migrate` through the installed script: it applies every migration, then reports the database up to date."""

from __future__ import annotations

import pytest

from crontick import db
from tests.support.databases import fresh_database
from tests.support.run_cli import cli_env, crontick


@pytest.mark.slow
def test_migrate_applies_then_reports_up_to_date(admin_url: str) -> None:
    versions = [v for v, _ in db.migration_files()]
    with fresh_database(admin_url, "template0") as empty:
        first = crontick("migrate", env=cli_env(empty))
        second = crontick("migrate", env=cli_env(empty))
    assert (first.returncode, first.stdout.strip()) == (0, f"applied: {', '.join(versions)}")
    assert (second.returncode, second.stdout.strip()) == (0, "up to date")
