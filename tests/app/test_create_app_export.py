"""`crontick.create_app(settings)`, as docs/configuration.md, docs/jobs.md and CONTRACT.md write it, serves the app."""

from __future__ import annotations

import httpx

import crontick
from crontick.app import create_app
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.servers import serve


def test_crontick_create_app_is_the_app_factory_and_serves_the_tick(database_url: str) -> None:
    assert crontick.create_app is create_app
    with serve(crontick.create_app(Settings(database_url=database_url, cron_secret=TEST_SECRET))) as base:
        tick = httpx.post(base + "/api/cron/tick", headers={"Authorization": f"Bearer {TEST_SECRET}"}, timeout=30)
    assert tick.status_code == 200, tick.text
    assert tick.json()["jobs"]["claimed"] == 0
