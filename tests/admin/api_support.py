"""Helpers for the JSON admin API tests: settings with both admin secrets, bearer headers, a live app."""

from __future__ import annotations

import dataclasses
from typing import Any

from crontick.settings import Settings
from tests.support.constants import TEST_SECRET

API_ADMIN_SECRET = "api-admin-secret-" + "A" * 32
API_VIEWER_SECRET = "api-viewer-secret-" + "V" * 32
ADMIN = {"Authorization": f"Bearer {API_ADMIN_SECRET}"}
VIEWER = {"Authorization": f"Bearer {API_VIEWER_SECRET}"}


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


def insert_jobs(
    conn: Any, count: int, *, status: str = "failed", type: str = "t_api.x", key: str | None = None
) -> list[int]:
    """`count` finished (or pending) jobs in one statement; returns their ids in order."""
    rows = conn.execute(
        "insert into jobs (type, payload, status, attempts, max_attempts, last_error, key, finished_at)"
        " select %(type)s, jsonb_build_object('n', g), %(status)s, 1, 1, 'ValueError: n=' || g, %(key)s,"
        " case when %(status)s in ('done', 'failed', 'cancelled') then now() end"
        " from generate_series(1, %(count)s) g order by g returning id",
        {"type": type, "status": status, "count": count, "key": key},
    ).fetchall()
    return [r[0] for r in rows]
