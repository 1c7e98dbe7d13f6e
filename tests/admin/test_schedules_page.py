"""The Schedules page: declared schedules with last and next slot and recent decisions, as HTML and JSON."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.schedules import registry
from tests.support.admin_pages import running, settings_for, signed_in
from tests.support.constants import TEST_SECRET

NAME = "admin-page-hourly"


@pytest.fixture
def declared() -> Iterator[None]:
    crontick.schedule(NAME, "0 * * * *", "admin_page_report", {"kind": "hourly"}, time_zone="Europe/Amsterdam")
    yield
    registry.unregister(NAME)


def _tick(base: str) -> dict[str, Any]:
    r = httpx.post(base + "/api/cron/tick", headers={"Authorization": f"Bearer {TEST_SECRET}"}, timeout=30)
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()
    return result


def test_schedules_page_shows_slots_and_coalesced_runs(
    declared: None, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        before = c.get("/admin/schedules")
        assert before.status_code == 200 and NAME in before.text and "not seen by a tick yet" in before.text
        _tick(base)
        conn.execute(
            "update crontick_schedules set evaluated_until = evaluated_until - interval '3 hours',"
            " next_at = '-infinity' where name = %s",
            (NAME,),
        )
        _tick(base)  # catch_up=latest: the newest missed slot is enqueued, the older ones coalesced
        (job_id,) = conn.execute("select id from jobs where schedule = %s", (NAME,)).fetchone()  # type: ignore[misc]
        page = c.get("/admin/schedules?tz=Europe/Amsterdam")
        assert page.status_code == 200
        assert f'href="/admin/jobs/{job_id}?tz=Europe%2FAmsterdam">#{job_id}</a>' in page.text
        assert 's-coalesced">coalesced</span>' in page.text and "0 * * * *" in page.text
        data = c.get("/admin/schedules.json").json()
        (item,) = [s for s in data["schedules"] if s["name"] == NAME]
        assert [d["outcome"] for d in item["recent"]] == ["enqueued", "coalesced"]
        assert item["next_slot"].endswith(":00:00Z") and item["seen_by_a_tick"] is True
