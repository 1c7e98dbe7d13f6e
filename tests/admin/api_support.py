"""Helpers for the JSON admin API tests: settings with both admin secrets, bearer headers, a live app."""

from __future__ import annotations

import dataclasses
from typing import Any

from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.credentials import ADMIN, API_ADMIN_SECRET, API_VIEWER_SECRET, VIEWER
from tests.support.job_rows import insert_jobs

__all__ = ["ADMIN", "API_ADMIN_SECRET", "API_VIEWER_SECRET", "VIEWER", "api_settings", "insert_jobs"]


def api_settings(database_url: str, **changes: Any) -> Settings:
    """Kicks off unless asked for, as tests/support/admin_pages.settings_for says why."""
    base = Settings(
        database_url=database_url,
        cron_secret=TEST_SECRET,
        admin_secret=API_ADMIN_SECRET,
        admin_viewer_secret=API_VIEWER_SECRET,
        kick="off",
    )
    return dataclasses.replace(base, **changes)
