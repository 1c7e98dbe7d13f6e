"""Health, a database that is down (503 + Retry-After) and comes back, and misconfiguration as JSON."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import job_row, settings_for
from tests.support.http_checks import AUTH, HEALTH, TICK, LiveApp, assert_json_error
from tests.support.logs import LogLines
from tests.support.servers import free_port
from tests.support.tcp_proxy import TcpProxy


def test_health_reports_the_last_tick(live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]) -> None:
    with live_app(settings_for(database_url)) as url:
        before = httpx.get(url + HEALTH)
        assert before.status_code == 200
        assert before.json() == {**before.json(), "ok": True, "last_tick_at": None}
        assert httpx.post(url + TICK, headers=AUTH).status_code == 200
        after = httpx.get(url + HEALTH).json()
    last = datetime.fromisoformat(after["last_tick_at"])
    assert after["ok"] is True and last.tzinfo is not None
    db_now = conn.execute("select now()").fetchone()[0]  # type: ignore[index]
    assert abs(db_now - last) < timedelta(minutes=1)


def test_unreachable_database_is_503_with_retry_after(live_app: LiveApp) -> None:
    closed = f"postgresql://postgres@127.0.0.1:{free_port()}/crontick"
    with live_app(Settings(database_url=closed, cron_secret=TEST_SECRET)) as url:
        tick = httpx.post(url + TICK, headers=AUTH)
        health = httpx.get(url + HEALTH)
        refused = httpx.post(url + TICK)
    assert_json_error(tick, 503, "database_unavailable")
    assert int(tick.headers["Retry-After"]) > 0
    assert_json_error(health, 503, "database_unavailable")
    assert health.json()["ok"] is False and "Retry-After" in health.headers
    # Auth is still checked first: a stranger learns nothing about the database.
    assert_json_error(refused, 401, "unauthorized")


def test_tick_recovers_when_the_database_comes_back(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    proxy = TcpProxy(database_url)
    proxy.start()
    try:
        with live_app(settings_for(proxy.conninfo)) as url:
            assert httpx.post(url + TICK, headers=AUTH).status_code == 200  # the app now holds a connection
            proxy.stop()  # the database goes away under the open connection
            job_id = crontick.enqueue(conn, "t_core.ok", {})
            dropped = httpx.post(url + TICK, headers=AUTH)
            refused = httpx.post(url + TICK, headers=AUTH)
            proxy.start()
            back = httpx.post(url + TICK, headers=AUTH)
            health = httpx.get(url + HEALTH)
    finally:
        proxy.stop()
    assert_json_error(dropped, 503, "database_unavailable")
    assert_json_error(refused, 503, "database_unavailable")
    assert "Retry-After" in dropped.headers and "Retry-After" in refused.headers
    assert back.status_code == 200 and back.json()["jobs"]["succeeded"] == 1
    assert job_row(conn, job_id)["status"] == "done"
    assert health.status_code == 200 and health.json()["last_tick_at"] is not None


@pytest.mark.parametrize(
    ("env", "mentions"),
    [
        ({"CRON_SECRET": "too-short"}, "CRON_SECRET"),
        ({"CRONTICK_BATCH_SIZE": "many"}, "CRONTICK_BATCH_SIZE"),
        ({"CRONTICK_HANDLERS": "no_such_module_for_crontick"}, "CRONTICK_HANDLERS"),
        ({"DATABASE_URL": ""}, "DATABASE_URL"),
        ({"DATABASE_URL": "postgresql://app:too-short pass@127.0.0.1/app"}, "DATABASE_URL"),
        ({"CRONTICK_HANDLERS": "broken_jobs_for_http"}, "KeyError"),
    ],
    ids=["short-secret", "bad-number", "bad-handlers", "no-database-url", "malformed-url", "handler-raises"],
)
def test_misconfiguration_is_503_json_never_a_traceback(
    live_app: LiveApp,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    env: dict[str, str],
    mentions: str,
    crontick_log: LogLines,  # noqa: F811 - the fixture imported above
) -> None:
    broken = tmp_path / "broken_jobs_for_http.py"
    broken.write_text("import os\nAPI_KEY = os.environ['NOT_SET_ANYWHERE']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("CRON_SECRET", TEST_SECRET)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with live_app(None) as url:  # settings come from the environment, as on Vercel
        tick = httpx.post(url + TICK, headers=AUTH)
        health = httpx.get(url + HEALTH)
    body = assert_json_error(tick, 503, "misconfigured")
    # The caller may be anyone: the detail naming the setting goes to the log, not the response.
    assert mentions not in body["detail"] and "server log" in body["detail"]
    assert mentions in crontick_log.text
    assert_json_error(health, 503, "misconfigured")
    assert mentions not in health.text
    assert "too-short" not in tick.text


def test_warm_instance_replaces_a_dead_idle_connection_without_an_error(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if every request came after a long idle (a frozen serverless instance): ping before reuse.
    monkeypatch.setattr(crontick.db.connection, "PING_AFTER_IDLE_SECONDS", 0.0)
    proxy = TcpProxy(database_url)
    proxy.start()
    try:
        with live_app(settings_for(proxy.conninfo)) as url:
            assert httpx.post(url + TICK, headers=AUTH).status_code == 200
            proxy.stop()  # the pooler closed the idle socket while the instance slept
            proxy.start()
            job_id = crontick.enqueue(conn, "t_core.ok", {})
            response = httpx.post(url + TICK, headers=AUTH)
    finally:
        proxy.stop()
    assert response.status_code == 200, response.text
    assert job_row(conn, job_id)["status"] == "done"


def test_malformed_database_url_in_settings_is_503_without_the_password(live_app: LiveApp) -> None:
    with live_app(Settings(database_url="postgresql://app:hunter2 pass@127.0.0.1/app", cron_secret=TEST_SECRET)) as url:
        response = httpx.post(url + TICK, headers=AUTH)
    assert_json_error(response, 503, "misconfigured")
    assert "hunter2" not in response.text
