"""examples/: crontick mounted in FastAPI (enqueue + kick_async) and used from a Django view (on_commit + kick)."""

from __future__ import annotations

import sys
from typing import Any

import httpx
import psycopg
import pytest

from crontick.kick import attach, wait_for_threads
from tests.conftest import TEST_SECRET, serve, url_of
from tests.kick.test_prompt_start import wait_until


@pytest.fixture
def app_env(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", url_of(database_url))
    monkeypatch.setenv("CRON_SECRET", TEST_SECRET)
    for name in ("CRONTICK_KICK", "AWS_LAMBDA_FUNCTION_NAME", "CRONTICK_HANDLERS", "CRONTICK_PUBLIC_URL"):
        monkeypatch.delenv(name, raising=False)
    attach(None)  # a fresh process: the runtime comes from this environment


def test_fastapi_example_mounts_crontick_and_kicks_after_the_commit(
    app_env: None, conn: psycopg.Connection[Any]
) -> None:
    from examples import fastapi_app

    fastapi_app.crontick_app._app = None  # a cold instance, built from this test's environment
    fastapi_app.sent.clear()
    with serve(fastapi_app.app) as base, httpx.Client() as client:
        response = client.post(base + "/signup", params={"email": "ada@example.com"})
        assert response.status_code == 200, response.text
        job_id = response.json()["job_id"]
        wait_until(lambda: fastapi_app.sent == ["ada@example.com"], timeout=5)  # no scheduled tick ran it
        health = client.get(base + "/api/health")
        tick = client.post(base + "/api/cron/tick", headers={"Authorization": f"Bearer {TEST_SECRET}"})
        hook = client.post(base + "/api/hooks/undeclared", content=b"{}")
    assert conn.execute("select status from jobs where id = %(id)s", {"id": job_id}).fetchone() == ("done",)
    assert health.status_code == 200 and tick.status_code == 200
    assert hook.status_code == 404 and hook.json()["error"] == "unknown_hook"


def test_django_example_kicks_on_commit_and_not_on_rollback(app_env: None, conn: psycopg.Connection[Any]) -> None:
    sys.modules.pop("examples.django_app", None)
    from django.test import Client

    from examples import django_app

    django_app.sent.clear()
    response = Client().post("/signup", {"email": "grace@example.com"})
    assert response.status_code == 200, response.content
    wait_for_threads()
    wait_until(lambda: django_app.sent == ["grace@example.com"], timeout=5)
    assert conn.execute("select status from jobs").fetchall() == [("done",)]

    from django.db import connection, transaction

    with pytest.raises(RuntimeError), transaction.atomic():  # the view's work fails: no job, no kick
        import crontick

        crontick.enqueue(connection.connection, "send_welcome_email_django", {"email": "nobody@example.com"})
        transaction.on_commit(crontick.kick)
        raise RuntimeError("rolled back")
    wait_for_threads()
    assert conn.execute("select count(*) from jobs").fetchone() == (1,)
    connection.close()
