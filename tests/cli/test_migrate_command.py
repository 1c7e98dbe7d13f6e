"""`crontick migrate` through the installed script: it applies every migration, then reports the database up to date."""

from __future__ import annotations

from pathlib import Path

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


def test_migrate_does_not_depend_on_the_handler_modules_importing_here(database_url: str, tmp_path: Path) -> None:
    """A deploy step's migrate runs without the app around it (Django not set up, the app's own variables unset):
    a handler module that cannot import there only skips the template check, which the first claim repeats."""
    (tmp_path / "needs_the_app.py").write_text("raise RuntimeError('the app is not set up')\n")
    env = {**cli_env(database_url), "CRONTICK_HANDLERS": "needs_the_app", "PYTHONPATH": str(tmp_path)}
    done = crontick("migrate", env=env)
    assert (done.returncode, done.stdout.strip()) == (0, "up to date"), done.stderr
    assert "warning: the handler modules' reminder templates are not checked here" in done.stderr
    assert "needs_the_app" in done.stderr and "Traceback" not in done.stderr
