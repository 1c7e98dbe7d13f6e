"""crontick.testing as an app uses it: examples/testing_app's own pytest suite, run as a separate pytest process."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.constants import ROOT
from tests.support.databases import admin_url

EXAMPLE = ROOT / "examples" / "testing_app"


def _example_suite(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`pytest -q <args>` in the example app's folder, with none of this run's crontick or pytest settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CRONTICK_", "CRON_", "DATABASE_", "PYTEST_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *args],
        cwd=EXAMPLE,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_the_example_apps_suite_passes_with_the_plugin_and_the_three_functions() -> None:
    done = _example_suite("--crontick-database-url", admin_url())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout, done.stdout


def test_the_plugin_takes_the_server_from_database_url_too() -> None:
    done = _example_suite("-k", "own", DATABASE_URL=admin_url())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout, done.stdout


def test_without_a_server_url_the_plugin_says_what_it_expected() -> None:
    done = _example_suite()
    assert done.returncode != 0
    assert "expected --crontick-database-url URL or DATABASE_URL" in done.stdout + done.stderr
