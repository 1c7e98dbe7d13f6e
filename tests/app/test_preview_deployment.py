"""A Vercel preview deployment (VERCEL_ENV=preview) runs no tick and no kick unless CRONTICK_ALLOW_PREVIEW=1:
sharing production's database, it would run production's jobs with preview code and send real reminders."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import httpx
import psycopg

import crontick
from crontick.hooks.kick import after_commit
from crontick.runtime import Runtime
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import settings_for
from tests.support.databases import url_of

AUTH = {"Authorization": f"Bearer {TEST_SECRET}"}


def test_a_preview_refuses_the_tick_with_409_and_runs_nothing(
    database_url: str, conn: psycopg.Connection[Any], live_app: Any
) -> None:
    job_id = crontick.enqueue(conn, "t_core.ok", {})
    preview = settings_for(url_of(database_url), vercel_env="preview")
    with live_app(preview) as base:
        refused = httpx.post(f"{base}/api/cron/tick", headers=AUTH, timeout=30)
        stranger = httpx.post(f"{base}/api/cron/tick", timeout=30)
    assert refused.status_code == 409
    assert refused.json()["error"] == "preview_deployment" and "CRONTICK_ALLOW_PREVIEW=1" in refused.json()["detail"]
    assert stranger.status_code == 401  # the refusal is for those who may tick, after their credential
    assert conn.execute("select status from jobs where id = %(id)s", {"id": job_id}).fetchone() == ("pending",)
    with live_app(dataclasses.replace(preview, allow_preview=True)) as base:
        allowed = httpx.post(f"{base}/api/cron/tick", headers=AUTH, timeout=30)
    assert allowed.status_code == 200 and allowed.json()["jobs"]["succeeded"] == 1


def test_a_preview_does_not_kick(database_url: str, conn: psycopg.Connection[Any]) -> None:
    crontick.enqueue(conn, "t_core.ok", {})

    async def kick(**changes: Any) -> None:
        rt = Runtime(settings_for(url_of(database_url), kick="inline", **changes))
        try:
            await after_commit(rt)
        finally:
            await rt.close()

    asyncio.run(kick(vercel_env="preview"))
    assert conn.execute("select count(*) from jobs where status = 'pending'").fetchone() == (1,)
    asyncio.run(kick(vercel_env="production"))
    assert conn.execute("select count(*) from jobs where status = 'done'").fetchone() == (1,)
