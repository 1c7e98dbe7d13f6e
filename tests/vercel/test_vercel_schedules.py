"""Vercel Schedules (path target): the request it sends ticks, and its execution id is recorded with the tick."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import httpx
import psycopg
import pytest

from crontick import vercel
from tests.support.constants import ROOT, TEST_SECRET
from tests.support.logs import LogLines
from tests.support.servers import serve
from tests.support.vercel import fresh_app, load_vercel_function

# A path target "calls your route the same way a Cron Job does" (vercel.com/docs/schedules/migrate-from-cron-jobs).
SCHEDULE = "7,22,37,52 * * * *"
SCHEDULES_HEADERS = {
    "user-agent": "vercel-cron/1.0",
    "x-vercel-cron-schedule": SCHEDULE,
    "authorization": f"Bearer {TEST_SECRET}",
}


def tick_rows(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    return [r[0] for r in conn.execute("select summary from crontick_ticks order by id").fetchall()]


def test_a_schedules_run_ticks_and_its_execution_id_is_stored_and_logged(
    host_env: None,
    conn: psycopg.Connection[Any],
    monkeypatch: pytest.MonkeyPatch,
    crontick_log: LogLines,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="crontick")  # tick lines are INFO
    app = fresh_app(load_vercel_function("api/cron/tick.py"), monkeypatch)
    run = {**SCHEDULES_HEADERS, vercel.EXECUTION_ID_HEADER: "exec_01KV8Z6Q2J7M3N4P5R6S7T8U9V"}
    with serve(app) as base, httpx.Client() as client:
        first = client.get(base + "/api/cron/tick", headers=run)
        # The same run delivered twice keeps its id: both ticks are recorded under it.
        again = client.get(base + "/api/cron/tick", headers=run)
        # A legacy Cron Job (vercel.json `crons`) sends no execution id and still ticks.
        legacy = client.get(
            base + "/api/cron/tick", headers={**SCHEDULES_HEADERS, "x-vercel-cron-schedule": "17 4 * * *"}
        )
    assert (first.status_code, again.status_code, legacy.status_code) == (200, 200, 200), first.text
    assert "execution_id" not in first.json()
    ids = [row.get("execution_id") for row in tick_rows(conn)]
    assert ids == ["exec_01KV8Z6Q2J7M3N4P5R6S7T8U9V", "exec_01KV8Z6Q2J7M3N4P5R6S7T8U9V", None]
    ticks = [json.loads(line) for line in crontick_log.lines if json.loads(line).get("event") == "tick"]
    assert [t.get("execution_id") for t in ticks] == ids


def test_a_schedules_run_without_the_secret_is_refused_and_not_recorded(
    host_env: None, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = fresh_app(load_vercel_function("api/cron/tick.py"), monkeypatch)
    headers = {"user-agent": "vercel-cron/1.0", vercel.EXECUTION_ID_HEADER: "exec_x"}
    with serve(app) as base:
        refused = httpx.get(base + "/api/cron/tick", headers=headers)
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    assert tick_rows(conn) == []


@pytest.mark.parametrize("value", ["", " ", "x" * (vercel.EXECUTION_ID_MAX_CHARS + 1), "a\nb", "a\x00b"])
def test_an_execution_id_that_is_empty_oversized_or_unprintable_is_dropped(value: str) -> None:
    assert vercel.execution_id({vercel.EXECUTION_ID_HEADER: value}) is None


def test_the_documented_schedule_targets_the_tick_route_with_get() -> None:
    """docs/deploy/vercel.md's `schedules` block: the path users copy must be the route that ticks."""
    page = (ROOT / "docs" / "deploy" / "vercel.md").read_text()
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", page, re.DOTALL)]
    schedules = [s for b in blocks for s in b.get("schedules", {}).values()]
    assert schedules, "expected a vercel.json `schedules` example on the Vercel page"
    for s in schedules:
        assert (s["path"], s.get("requestMethod", "GET")) == ("/api/cron/tick", "GET"), s
        assert len(s["schedule"].split()) == 5
