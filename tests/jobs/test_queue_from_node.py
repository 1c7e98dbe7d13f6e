"""examples/node/enqueue.mjs: a Node service enqueues through `crontick.enqueue(...)` in SQL, with `pg` from npm.

`npm ci` installs the pinned `pg` into a temporary copy of the example; the script runs against a
migrated database with no search_path (every name it sends is qualified), commits one signup with
its job and rolls back another after enqueueing; a real tick over HTTP then runs the committed job
once, and the rolled-back job never exists. Without node or npm, or when npm cannot reach its
registry, the test skips and says why; CI (.ci/run sets CRONTICK_REQUIRE_NODE=1) fails instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote, urlencode

import httpx
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from crontick.settings import Settings
from tests.jobs import node_enqueue_handlers
from tests.support.constants import ROOT, TEST_SECRET
from tests.support.databases import url_of

EXAMPLE = ROOT / "examples" / "node"
REQUIRE_VARIABLE = "CRONTICK_REQUIRE_NODE"
NPM_CI_TIMEOUT_SECONDS = 300
# npm's codes for a registry it could not reach (DNS, refused, reset, timed out, a proxy in the way).
NETWORK_CODES = {
    "ECONNREFUSED",
    "ECONNRESET",
    "ENOTFOUND",
    "EAI_AGAIN",
    "ETIMEDOUT",
    "ENETUNREACH",
    "EHOSTUNREACH",
    "ERR_SOCKET_TIMEOUT",
    "E407",
}


def unavailable(reason: str) -> NoReturn:
    """Skip with the reason on a developer's machine; fail with it in CI, where Node must run."""
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(f"the Node example cannot run: {reason} ({REQUIRE_VARIABLE}=1)", pytrace=False)
    pytest.skip(f"the Node example: {reason} (CI sets {REQUIRE_VARIABLE}=1 and fails instead)")


def npm_unreachable(output: str) -> str | None:
    """The npm error code when `npm ci` failed for want of the registry, else None (a real failure)."""
    codes = set(re.findall(r"^npm (?:error|ERR!) code (\S+)", output, re.MULTILINE))
    network = codes & NETWORK_CODES
    if network or re.search(r"^npm (?:error|ERR!) network ", output, re.MULTILINE):
        return ", ".join(sorted(network)) or "network"
    return None


@pytest.fixture(scope="module")
def node_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of examples/node with `npm ci` done: node_modules never lands in the repository."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        unavailable("expected node (18 or newer) and npm on PATH, got none (apt-get install nodejs npm)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 18:
        unavailable(f"expected node 18 or newer, got: {version}")
    work = tmp_path_factory.mktemp("node-example")
    for name in ("package.json", "package-lock.json", "enqueue.mjs"):
        shutil.copy(EXAMPLE / name, work / name)
    command = [npm, "ci", "--no-audit", "--no-fund", "--prefer-offline", "--fetch-retries=1"]
    try:
        done = subprocess.run(
            command,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=NPM_CI_TIMEOUT_SECONDS,
            env={**os.environ, "npm_config_update_notifier": "false"},
        )
    except subprocess.TimeoutExpired:
        unavailable(f"expected `npm ci` to install pg within {NPM_CI_TIMEOUT_SECONDS} s, got no end (no registry?)")
    output = done.stdout + done.stderr
    if done.returncode != 0:
        code = npm_unreachable(output)
        if code:
            registry = subprocess.run([npm, "config", "get", "registry"], capture_output=True, text=True).stdout
            detail = next((line for line in output.splitlines() if "request to" in line), "")
            unavailable(f"`npm ci` could not reach the registry {registry.strip()} ({code}) {detail}".rstrip())
        # Not the network: the lock file and package.json disagree, or the lock is broken. Always a failure.
        pytest.fail(f"expected `npm ci` to install examples/node, got exit {done.returncode}:\n{output[-2000:]}")
    assert (work / "node_modules" / "pg" / "package.json").is_file()
    return work


def postgres_url(conninfo: str) -> str:
    """The libpq conninfo the fixtures give, as the postgres:// URL node-postgres takes (sockets too)."""
    d = conninfo_to_dict(conninfo)
    auth = ""
    if d.get("user"):
        auth = quote(str(d["user"]), safe="")
        if d.get("password"):
            auth += ":" + quote(str(d["password"]), safe="")
        auth += "@"
    host, port, dbname = str(d.get("host") or ""), d.get("port"), quote(str(d["dbname"]), safe="")
    if host.startswith("/"):  # a unix socket directory (the embedded server): pg reads ?host=
        query = {"host": host} | ({"port": str(port)} if port else {})
        return f"postgres://{auth}/{dbname}?{urlencode(query)}"
    netloc = (host or "localhost") + (f":{port}" if port else "")
    return f"postgres://{auth}{netloc}/{dbname}"


@pytest.fixture
def no_search_path(database_url: str, admin_url: str) -> Iterator[str]:
    """The test database as an app's own would be: the fixtures' search_path reset, so only qualified names work."""
    name = conninfo_to_dict(database_url)["dbname"]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("alter database {} reset search_path").format(sql.Identifier(str(name))))
    yield database_url


def run_script(example: Path, database_url: str) -> dict[str, Any]:
    node = shutil.which("node")
    assert node
    done = subprocess.run(
        [node, "enqueue.mjs"],
        cwd=example,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DATABASE_URL": postgres_url(database_url)},
    )
    assert done.returncode == 0, f"enqueue.mjs exited {done.returncode}: {done.stderr.strip()}"
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def test_a_node_service_enqueues_in_its_own_transaction_and_a_tick_runs_it_once(
    node_example: Path, no_search_path: str, live_app: Any
) -> None:
    url = no_search_path
    node_enqueue_handlers.runs.clear()
    result = run_script(node_example, url)
    committed, rolled_back = int(result["committed"]["job_id"]), int(result["rolled_back"]["job_id"])
    assert rolled_back != committed  # the rolled-back enqueue did get an id, inside its transaction
    assert "declined" in result["rolled_back"]["error"]

    with psycopg.connect(url) as conn:
        assert conn.execute("show search_path").fetchone() == ('"$user", public',)
        jobs = conn.execute("select id, type, payload, status, key from crontick.jobs order by id").fetchall()
        signups = conn.execute("select id, email from public.signups").fetchall()
    email = result["committed"]["email"]
    assert jobs == [
        (committed, "signup.welcome_email", {"email": email, "signup_id": 1}, "pending", f"welcome:{email}")
    ]
    assert signups == [(1, email)]  # the app's own row committed with its job; the other with neither

    settings = Settings(
        database_url=url_of(url),
        cron_secret=TEST_SECRET,
        handler_modules=("tests.jobs.node_enqueue_handlers",),
    )
    auth = {"Authorization": f"Bearer {TEST_SECRET}"}
    with live_app(settings) as base:
        first = httpx.post(f"{base}/api/cron/tick", headers=auth, timeout=30)
        second = httpx.post(f"{base}/api/cron/tick", headers=auth, timeout=30)
    assert first.status_code == 200, first.text
    assert (first.json()["jobs"]["claimed"], first.json()["jobs"]["succeeded"]) == (1, 1)
    assert second.status_code == 200 and second.json()["jobs"]["claimed"] == 0

    assert node_enqueue_handlers.runs == [(committed, {"email": email, "signup_id": 1})]
    with psycopg.connect(url) as conn:
        rows = conn.execute("select id, status, attempts from crontick.jobs order by id").fetchall()
        ever = conn.execute(
            "select (select count(*) from crontick.jobs where id = %(id)s)"
            " + (select count(*) from crontick.job_attempts where job_id = %(id)s)",
            {"id": rolled_back},
        ).fetchone()
    assert rows == [(committed, "done", 1)]
    assert ever == (0,)  # the rolled-back job never existed, and never ran


def test_npm_failures_for_want_of_a_registry_are_told_apart_from_real_ones() -> None:
    refused = "npm error code ECONNREFUSED\nnpm error errno ECONNREFUSED\nnpm error FetchError: request to …"
    offline = "npm error code ENOTFOUND\nnpm error network request to https://registry.npmjs.org/pg failed"
    out_of_sync = "npm error code EUSAGE\nnpm error `npm ci` can only install packages when your package.json and …"
    assert npm_unreachable(refused) == "ECONNREFUSED"
    assert npm_unreachable(offline) == "ENOTFOUND"
    assert npm_unreachable(out_of_sync) is None  # a stale lock file fails the test, even off CI


def test_the_url_given_to_node_keeps_the_password_and_unix_sockets() -> None:
    assert postgres_url("host=127.0.0.1 port=5432 user=postgres password=p@ss dbname=t") == (
        "postgres://postgres:p%40ss@127.0.0.1:5432/t"
    )
    assert postgres_url("host='/tmp/pg dir' user=postgres dbname=t") == "postgres://postgres@/t?host=%2Ftmp%2Fpg+dir"
