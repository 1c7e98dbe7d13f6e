"""Vercel: vercel.json sends /, /admin… and /api/admin… to api/admin.py, which serves the admin as is."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from tests.support.admin_pages import ADMIN_SECRET
from tests.support.constants import ROOT, TEST_SECRET
from tests.support.databases import url_of
from tests.support.servers import serve
from tests.support.vercel import load_vercel_function


def _destination(path: str) -> str | None:
    """The function a request path reaches under vercel.json's rewrites (a file under api/ wins first)."""
    if (ROOT / f"{path.lstrip('/')}.py").exists():
        return path
    for rule in json.loads((ROOT / "vercel.json").read_text())["rewrites"]:
        pattern = "^" + re.sub(r"/:path\*", "(/.*)?", rule["source"]) + "$"
        if re.match(pattern, path):
            return str(rule["destination"])
    return None


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/admin",
        "/admin/login",
        "/admin/jobs/12",
        "/admin/static/admin.css",
        "/api/admin/jobs",
        "/api/admin/openapi.json",
    ],
)
def test_rewrites_send_the_admin_to_its_function(path: str) -> None:
    assert _destination(path) == "/api/admin"
    assert (ROOT / "api" / "admin.py").exists()


def test_the_tick_and_health_keep_their_own_functions() -> None:
    assert _destination("/api/cron/tick") == "/api/cron/tick"
    assert _destination("/api/health") == "/api/health"


def test_the_admin_function_serves_login_and_pages(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", url_of(database_url))
    monkeypatch.setenv("CRON_SECRET", TEST_SECRET)
    monkeypatch.setenv("CRONTICK_ADMIN_SECRET", ADMIN_SECRET)
    module = load_vercel_function("api/admin.py")
    monkeypatch.setattr(module.app, "_app", None)
    with serve(module.app) as base, httpx.Client(base_url=base, headers={"Origin": base}) as c:
        assert c.get("/").headers["location"] == "/admin"
        r = c.post("/admin/login", data={"secret": ADMIN_SECRET})
        assert r.status_code == 303
        page: Any = c.get("/admin")
        assert page.status_code == 200 and "Failed jobs" in page.text
        assert c.get("/admin/static/admin.css").headers["content-type"].startswith("text/css")
