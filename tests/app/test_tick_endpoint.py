"""The tick endpoint over real HTTP (uvicorn on loopback): summary, auth, errors as JSON, `more`, budget."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import (
    job_row,
    ran_fixture,  # noqa: F401 (provides the `ran` fixture)
    settings_for,
)
from tests.support.databases import fresh_database
from tests.support.http_checks import AUTH, TICK, LiveApp, assert_json_error


@pytest.fixture
def base_url(live_app: LiveApp, database_url: str) -> Iterator[str]:
    with live_app(settings_for(database_url)) as url:
        yield url


def test_post_returns_the_contract_summary(base_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_core.ok", {})
    response = httpx.post(base_url + TICK, headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert {"jobs", "reminders", "more", "duration_ms"} <= body.keys()
    assert {"claimed", "succeeded", "retried", "failed", "rescued"} <= body["jobs"].keys()
    assert {"sent", "failed"} <= body["reminders"].keys()
    assert (body["jobs"]["claimed"], body["jobs"]["succeeded"], body["more"]) == (1, 1, False)
    assert isinstance(body["duration_ms"], int) and body["duration_ms"] >= 0
    assert job_row(conn, job_id)["status"] == "done"


def test_get_works_too_for_vercel_cron(base_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_core.ok", {})
    headers = {**AUTH, "User-Agent": "vercel-cron/1.0", "x-vercel-cron-schedule": "0 9 * * *"}
    response = httpx.get(base_url + TICK, headers=headers)
    assert response.status_code == 200
    assert response.json()["jobs"]["succeeded"] == 1
    assert job_row(conn, job_id)["status"] == "done"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer wrong-secret-" + "y" * 32},
        {"Authorization": f"Bearer {TEST_SECRET[:-1]}"},
        {"Authorization": f"Bearer {TEST_SECRET}x"},
        {"Authorization": f"Basic {TEST_SECRET}"},
        {"X-Cron-Secret": TEST_SECRET},
    ],
    ids=["missing", "empty", "wrong", "prefix", "longer", "basic-scheme", "other-header"],
)
def test_missing_or_wrong_credential_is_401_and_runs_nothing(
    base_url: str, conn: psycopg.Connection[Any], headers: dict[str, str]
) -> None:
    job_id = crontick.enqueue(conn, "t_core.ok", {})
    for method in ("POST", "GET"):
        response = httpx.request(method, base_url + TICK, headers=headers)
        assert_json_error(response, 401, "unauthorized")
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert job_row(conn, job_id)["status"] == "pending"


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH"])
def test_other_methods_are_405_json(base_url: str, method: str) -> None:
    response = httpx.request(method, base_url + TICK, headers=AUTH)
    assert_json_error(response, 405, "method_not_allowed")
    assert {"GET", "POST"} <= {m.strip() for m in response.headers["Allow"].split(",")}


def test_unknown_path_is_404_json(base_url: str) -> None:
    assert_json_error(httpx.get(base_url + "/api/cron/tock", headers=AUTH), 404, "not_found")


def test_no_auth_configured_is_503_and_runs_nothing(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_core.ok", {})
    with live_app(Settings(database_url=database_url)) as url:
        for headers in ({}, AUTH):
            body = assert_json_error(httpx.post(url + TICK, headers=headers), 503, "auth_not_configured")
            assert "CRON_SECRET" in body["detail"]
    assert job_row(conn, job_id)["status"] == "pending"


def test_more_is_true_while_more_is_due_than_the_batch(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ids = crontick.enqueue_many(conn, [("t_core.ok", {}) for _ in range(5)])
    with live_app(settings_for(database_url, batch_size=2)) as url:
        summaries = [httpx.post(url + TICK, headers=AUTH).json() for _ in range(3)]
        after = httpx.post(url + TICK, headers=AUTH).json()
    assert [(s["jobs"]["claimed"], s["more"]) for s in summaries] == [(2, True), (2, True), (1, False)]
    assert (after["jobs"]["claimed"], after["more"]) == (0, False)
    assert {job_row(conn, i)["status"] for i in ids} == {"done"}


def test_time_budget_stops_claiming_and_leaves_more(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from crontick.jobs import registry

    # Other test modules declare handlers whose timeout_seconds exceed this 0.3 s budget (a ConfigError at start-up).
    monkeypatch.setattr(registry, "check_budget", lambda *args, **kwargs: None)
    ids = crontick.enqueue_many(conn, [("t_core.slow", {}) for _ in range(4)])
    with live_app(settings_for(database_url, time_budget_seconds=0.3, concurrency=1)) as url:
        body = httpx.post(url + TICK, headers=AUTH, timeout=30).json()
    assert body["more"] is True
    assert (body["jobs"]["claimed"], body["jobs"]["retried"], body["jobs"]["released"]) == (4, 1, 3)
    rows = [job_row(conn, i) for i in ids]
    assert sorted(r["attempts"] for r in rows) == [0, 0, 0, 1]
    assert {r["status"] for r in rows} == {"pending"}


def test_unmigrated_database_is_a_json_error(live_app: LiveApp, admin_url: str) -> None:
    with fresh_database(admin_url, "template0") as empty, live_app(settings_for(empty)) as url:
        body = assert_json_error(httpx.post(url + TICK, headers=AUTH), 500, "tick_failed")
    assert "crontick migrate" in body["detail"]


def test_secret_is_never_in_any_response(live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]) -> None:
    crontick.enqueue(conn, "t_core.leaks_secret", {})
    with live_app(settings_for(database_url)) as url:
        responses = [
            httpx.post(url + TICK, headers=AUTH),
            httpx.post(url + TICK, headers={"Authorization": f"Bearer {TEST_SECRET[:20]}"}),
            httpx.put(url + TICK, headers=AUTH),
            httpx.get(url + "/api/health", headers=AUTH),
            httpx.get(url + "/nowhere", headers=AUTH),
        ]
    assert [r.status_code for r in responses] == [200, 401, 405, 200, 404]
    for r in responses:
        assert TEST_SECRET not in r.text and TEST_SECRET[:20] not in r.text
        assert TEST_SECRET not in str(r.headers)


def test_concurrent_ticks_on_one_instance_run_each_job_once(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], ran: list[int]
) -> None:
    ids = crontick.enqueue_many(conn, [("t_core.ok", {}) for _ in range(60)])

    async def burst(url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=30) as client:
            return list(await asyncio.gather(*(client.post(TICK) for _ in range(6))))

    with live_app(settings_for(database_url, batch_size=10)) as url:
        responses = asyncio.run(burst(url))
    assert [r.status_code for r in responses] == [200] * 6, [r.text for r in responses]
    assert sum(r.json()["jobs"]["succeeded"] for r in responses) == 60
    assert sorted(ran) == sorted(ids)
    assert conn.execute("select count(*) from jobs where status = 'done'").fetchone() == (60,)
