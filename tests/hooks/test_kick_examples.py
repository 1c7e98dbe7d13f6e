"""examples/: crontick mounted at /ops in FastAPI (enqueue + kick_async, the admin, the host's own 404 and 405)."""

from __future__ import annotations

from typing import Any

import httpx
import psycopg
import pytest

from crontick.hooks.kick import attach
from tests.support.admin_pages import ADMIN_SECRET, add_jobs, csrf_of, urls_in
from tests.support.constants import TEST_SECRET
from tests.support.databases import url_of
from tests.support.servers import serve
from tests.support.waiting import wait_until


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
        health = client.get(base + "/ops/api/health")
        tick = client.post(base + "/ops/api/cron/tick", headers={"Authorization": f"Bearer {TEST_SECRET}"})
        hook = client.post(base + "/ops/api/hooks/undeclared", content=b"{}")
    assert conn.execute("select status from jobs where id = %(id)s", {"id": job_id}).fetchone() == ("done",)
    assert health.status_code == 200 and tick.status_code == 200
    assert hook.status_code == 404 and hook.json()["error"] == "unknown_hook"


def test_fastapi_example_keeps_its_own_404_and_405_and_serves_the_admin_under_ops(
    app_env: None, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from examples import fastapi_app

    monkeypatch.setenv("CRONTICK_ADMIN_SECRET", ADMIN_SECRET)
    fastapi_app.crontick_app._app = None  # a cold instance, built from this test's environment
    [failed] = add_jobs(conn, 1, type="example_broken")
    with serve(fastapi_app.app) as base, httpx.Client(base_url=base) as c:
        # Outside /ops the host app answers, its own way: FastAPI's 404 and 405, never crontick's JSON.
        assert (c.get("/nope").status_code, c.get("/nope").json()) == (404, {"detail": "Not Found"})
        assert (c.get("/signup").status_code, c.get("/signup").json()) == (405, {"detail": "Method Not Allowed"})
        outside = c.post("/api/cron/tick", headers={"Authorization": f"Bearer {TEST_SECRET}"})
        assert (outside.status_code, outside.json()) == (404, {"detail": "Not Found"})
        assert c.get("/admin").status_code == 404

        # The admin, end to end, as a browser uses it: every URL it hands out is under /ops.
        c.headers.update({"Origin": base, "Sec-Fetch-Site": "same-origin"})
        gate = c.get("/ops/admin")
        assert gate.status_code == 303 and gate.headers["location"] == "/ops/admin/login?next=%2Fops%2Fadmin"
        login = c.get(gate.headers["location"])
        assert ("form", "action", "/ops/admin/login") in urls_in(login.text)
        signed = c.post("/ops/admin/login", data={"secret": ADMIN_SECRET, "next": "/ops/admin"})
        assert signed.status_code == 303 and signed.headers["location"] == "/ops/admin"
        dashboard = c.get(signed.headers["location"])
        assert dashboard.status_code == 200 and "example_broken" in dashboard.text
        urls = [value for _, _, value in urls_in(dashboard.text)]
        assert len(urls) > 10 and all(value and value.startswith("/ops/") for value in urls), urls
        assert f"/ops/admin/jobs/{failed}" in urls
        job_page = c.get(f"/ops/admin/jobs/{failed}")
        csrf = csrf_of(job_page.text)
        retry = f"/ops/admin/jobs/{failed}/retry"
        assert ("form", "action", retry) in urls_in(job_page.text)
        retried = c.post(retry, data={"csrf": csrf, "back": f"/ops/admin/jobs/{failed}", "confirm": "yes"})
        assert retried.status_code == 303 and retried.headers["location"] == f"/ops/admin/jobs/{failed}"
        assert conn.execute("select status from jobs where id = %s", (failed,)).fetchone() == ("pending",)
        out = c.post("/ops/admin/logout", data={"csrf": csrf})
        assert out.status_code == 303 and out.headers["location"] == "/ops/admin/login?out=1"
        assert c.get("/ops/admin").status_code == 303  # signed out
