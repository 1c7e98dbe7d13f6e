"""examples/django_project, run as a user runs it: manage.py in subprocesses, uvicorn serving its ASGI app, real PostgreSQL.

Each test makes an empty database of the project's own (no template, no search_path, so the SQL
here names `crontick.jobs`), and runs on psycopg 3 (what Django picks whenever it is installed)
and on psycopg2 (the project's `project.psycopg2_backend`, which keeps Django there). crontick's
DATABASE_URL is never set: it comes from Django's DATABASES, as docs/django.md says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.django.projects import project_database
from tests.support.constants import ROOT, TEST_SECRET
from tests.support.servers import free_port

PROJECT = ROOT / "examples" / "django_project"
ADMIN_SECRET = "admin-secret-" + "y" * 32
# The handler's ORM write, as pg_stat_activity shows the last statement of a connection still open.
HANDLER_UPDATE = 'UPDATE "signups_signup"%'


@dataclass
class Project:
    """The example project on its own database: its environment, and the commands a user would type."""

    url: str
    env: dict[str, str]

    def manage(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=PROJECT,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )

    def migrate(self) -> None:
        """`manage.py migrate` alone: Django's tables, and crontick's schema through crontick.django's migration."""
        done = self.manage("migrate")
        assert done.returncode == 0, done.stderr

    @contextmanager
    def serve(self, port: int | None = None, **env: str) -> Iterator[str]:
        """uvicorn serving project.asgi:application (Django with crontick mounted at /ops); yields the base URL."""
        port = port or free_port()
        with tempfile.TemporaryFile("w+") as log:  # a file, not a pipe: crontick's log lines never block the server
            command = [sys.executable, "-m", "uvicorn", "project.asgi:application", "--port", str(port)]
            server = subprocess.Popen(command, cwd=PROJECT, env={**self.env, **env}, stderr=log, text=True)
            base = f"http://127.0.0.1:{port}"
            try:
                deadline = time.monotonic() + 60
                while True:
                    if server.poll() is not None:
                        log.seek(0)
                        raise AssertionError(f"uvicorn exited {server.returncode}: {log.read()}")
                    try:
                        httpx.get(base + "/ops/api/health", timeout=2)
                        break
                    except httpx.TransportError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.1)
                yield base
            finally:
                server.terminate()
                try:
                    server.wait(10)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()

    def one(self, query: str, params: dict[str, Any] | None = None) -> Any:
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute(query, params).fetchone()
        return None if row is None else row[0] if len(row) == 1 else row


@pytest.fixture(params=["psycopg", "psycopg2"])
def project(request: pytest.FixtureRequest, admin_url: str) -> Iterator[Project]:
    with project_database(
        admin_url,
        PROJECT,
        "project.settings",
        DJANGO_DB_DRIVER=request.param,
        CRONTICK_ADMIN_SECRET=ADMIN_SECRET,
        CRONTICK_HANDLERS="signups.jobs",
    ) as (url, env):
        yield Project(url, env)


def wait_until(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {check}")
        time.sleep(0.05)
    return value


def test_a_view_enqueues_in_its_transaction_and_manage_py_crontick_tick_runs_the_job_once(project: Project) -> None:
    driver = project.manage(
        "shell",
        "-c",
        "from django.db import connection; connection.ensure_connection(); print(type(connection.connection).__module__)",
    )
    assert driver.stdout.split()[-1].split(".")[0] == project.env["DJANGO_DB_DRIVER"], driver.stderr

    first = project.manage("crontick_migrate")  # on the empty database: crontick's schema only
    assert first.returncode == 0 and first.stdout.startswith("applied: 0001_init"), first.stderr
    assert project.one("select count(*) from crontick.jobs") == 0
    assert project.one("select count(*) from pg_tables where schemaname = 'public'") == 0
    project.migrate()  # the project's tables; crontick.django's own migration finds crontick up to date
    assert project.manage("crontick_migrate").stdout.strip() == "up to date"

    with project.serve(CRONTICK_KICK="off") as base, httpx.Client(base_url=base, timeout=30) as client:
        made = client.post("/signup", data={"email": "ada@example.com"})
        assert made.status_code == 200, made.text
        signup_id, job_id = made.json()["signup_id"], made.json()["job_id"]
        # The plan is checked after the row and the job were written: the rollback takes both.
        refused = client.post("/signup", data={"email": "bob@example.com", "plan": "gold"})
        assert refused.status_code == 400 and refused.json()["error"] == "unknown_plan"
    assert project.one("select count(*) from signups_signup where email = 'bob@example.com'") == 0
    assert project.one("select array_agg(id) from crontick.jobs") == [job_id]
    # The refused signup did enqueue (it drew the next id) before its transaction rolled back.
    assert project.one("select pg_sequence_last_value(pg_get_serial_sequence('crontick.jobs', 'id'))") == job_id + 1
    assert project.one("select type, payload, status from crontick.jobs") == (
        "send_welcome_email",
        {"signup_id": signup_id},
        "pending",
    )
    assert project.one("select welcomed_at from signups_signup where id = %(id)s", {"id": signup_id}) is None

    tick = project.manage("crontick_tick")
    assert tick.returncode == 0, tick.stderr
    jobs = json.loads(tick.stdout)["jobs"]
    assert (jobs["claimed"], jobs["succeeded"]) == (1, 1)
    assert project.one("select welcomed_at is not null from signups_signup where id = %(id)s", {"id": signup_id})
    assert project.one("select status, attempts from crontick.jobs") == ("done", 1)
    drained = project.manage("crontick_tick", "--drain")
    assert drained.returncode == 0 and json.loads(drained.stdout)["jobs"]["claimed"] == 0  # it ran once


def test_the_tick_hooks_and_admin_answer_under_ops_through_the_asgi_router_and_a_commit_kicks(
    project: Project,
) -> None:
    project.migrate()
    assert project.manage("crontick_migrate").stdout.strip() == "up to date"  # migrate installed it
    # A job enqueued by other means (here plain SQL), for the scheduler's tick over HTTP to run.
    signup_id = project.one(
        "insert into signups_signup (email, plan, created_at) values ('grace@example.com', 'pro', now()) returning id"
    )
    project.one(
        "select crontick.enqueue('send_welcome_email', jsonb_build_object('signup_id', %(id)s::bigint))",
        {"id": signup_id},
    )
    bearer = {"Authorization": f"Bearer {TEST_SECRET}"}
    with project.serve() as base, httpx.Client(base_url=base, timeout=30) as client:
        tick = client.post("/ops/api/cron/tick", headers=bearer)
        assert tick.status_code == 200, tick.text
        assert tick.json()["jobs"]["succeeded"] == 1
        assert project.one("select welcomed_at is not null from signups_signup where id = %(id)s", {"id": signup_id})
        # The handler's ORM connection was closed after the job, as Django closes a request's (CONN_MAX_AGE 0):
        # the tick's worker thread lives on in the server and would hold it open otherwise.
        wait_until(
            lambda: project.one(
                "select count(*) = 0 from pg_stat_activity where datname = current_database() and query like %(q)s",
                {"q": HANDLER_UPDATE},
            ),
            timeout=5,
        )

        unauthorised = client.post("/ops/api/cron/tick")
        health = client.get("/ops/api/health")
        hook = client.post("/ops/api/hooks/undeclared", content=b"{}")
        login = client.get("/ops/admin/login")
        unknown_under_ops = client.get("/ops/nothing-here")
        # Outside the prefix it is Django's project: its own 404, and nothing of crontick's at the old paths.
        django_404 = client.get("/nothing-here")
        no_root_tick = client.post("/api/cron/tick", headers=bearer)
        get_signup = client.get("/signup")

        # A signup in the view's transaction.atomic: once it commits, on_commit kicks and the job runs
        # without any tick being called.
        made = client.post("/signup", data={"email": "kick@example.com"})
        assert made.status_code == 200, made.text
        kicked = made.json()["signup_id"]
        wait_until(
            lambda: project.one("select welcomed_at is not null from signups_signup where id = %(id)s", {"id": kicked})
        )
    assert unauthorised.status_code == 401 and unauthorised.json()["error"] == "unauthorized"
    assert health.status_code == 200 and health.json()["ok"] is True and health.json()["last_tick_at"]
    assert hook.status_code == 404 and hook.json()["error"] == "unknown_hook"
    assert login.status_code == 200 and 'name="secret"' in login.text
    assert unknown_under_ops.status_code == 404 and unknown_under_ops.json()["error"] == "not_found"
    assert django_404.status_code == 404 and "text/html" in django_404.headers["content-type"]
    assert no_root_tick.status_code == 404 and "text/html" in no_root_tick.headers["content-type"]
    assert get_signup.status_code == 405  # Django's require_POST, not crontick's JSON 405
    assert project.one("select array_agg(status order by id) from crontick.jobs") == ["done", "done"]
    assert project.one("select sum(attempts) from crontick.jobs") == 2


@pytest.mark.parametrize("project", ["psycopg"], indirect=True)  # no driver of Django's is involved
def test_manage_py_test_migrate_sql_one_line_errors_and_django_without_mount(project: Project) -> None:
    printed = project.manage("crontick_migrate", "--sql")  # for teams that apply SQL themselves: nothing is run
    assert printed.returncode == 0 and 'create schema if not exists "crontick"' in printed.stdout, printed.stderr
    assert project.one("select to_regnamespace('crontick')") is None
    # Django's test runner makes its test database through migrate, crontick's schema with it.
    tested = project.manage("test", "signups", "--noinput")
    assert tested.returncode == 0 and "OK" in tested.stderr, tested.stderr
    project.migrate()
    down = project.manage("crontick_tick", POSTGRES_PORT=str(free_port()))  # nothing listens there
    assert down.returncode == 1
    assert down.stderr.startswith("crontick: error: ") and len(down.stderr.strip().splitlines()) == 1, down.stderr
    wrong = project.manage("crontick_tick", CRONTICK_BATCH_SIZE="lots")
    assert wrong.returncode != 0 and "(crontick.E001) CRONTICK_BATCH_SIZE: expected" in wrong.stderr
    assert "Traceback" not in down.stderr + wrong.stderr
    # The ASGI app reads crontick's settings once, at start-up: a wrong one stops the server there, saying which.
    with pytest.raises(AssertionError, match=r"ImproperlyConfigured: crontick: CRONTICK_BATCH_SIZE: expected"):
        with project.serve(CRONTICK_BATCH_SIZE="lots"):
            pass

    # Django on its own (WSGI, runserver, an asgi.py without mount): crontick's paths say what to fix.
    reached = project.manage(
        "shell",
        "-c",
        "from django.test import Client; r = Client(HTTP_HOST='localhost').post('/ops/api/cron/tick'); "
        "print(r.status_code, r.content.decode())",
    )
    status, _, body = reached.stdout.strip().splitlines()[-1].partition(" ")
    assert status == "503" and json.loads(body)["error"] == "not_mounted", reached.stderr
    assert "crontick.django.asgi.mount" in json.loads(body)["detail"]


@pytest.mark.parametrize("project", ["psycopg"], indirect=True)
def test_an_async_handler_that_uses_the_async_orm_leaves_no_connection_open(project: Project) -> None:
    project.migrate()
    script = Path(__file__).with_name("async_handler_script.py")
    shell = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "-c", f"import runpy; runpy.run_path({str(script)!r})"],
        cwd=PROJECT,
        env={**project.env, "CRONTICK_KICK": "off"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert shell.stdin is not None and shell.stdout is not None and shell.stderr is not None
    try:
        seen = []
        while (line := shell.stdout.readline()) and line.strip() != "ticked":
            seen.append(line)
        assert line.strip() == "ticked", f"{seen} {shell.stderr.read() if shell.poll() is not None else ''}"
        assert project.one("select plan from signups_signup where email = 'async@example.com'") == "pro"
        # The process is alive, and so is the thread asgiref ran the job's query in.
        wait_until(
            lambda: project.one(
                "select count(*) = 0 from pg_stat_activity where datname = current_database() and query like %(q)s",
                {"q": HANDLER_UPDATE},
            ),
            timeout=5,
        )
    finally:
        shell.stdin.close()
        shell.wait(30)
        shell.stdout.close()
        shell.stderr.close()
    assert shell.returncode == 0


@pytest.mark.parametrize("project", ["psycopg"], indirect=True)
def test_under_ops_nothing_redirects_to_the_host_header_that_allowed_hosts_refuses(project: Project) -> None:
    """`/ops` and `/ops/` both answer as crontick's root, with a path for a Location; a slash too many is a 404.
    Starlette's redirect would have sent the browser to whatever Host the request named, past ALLOWED_HOSTS."""
    forged = {"Host": "evil.example"}
    with project.serve() as base, httpx.Client(base_url=base, timeout=30) as client:
        bare = client.get("/ops", headers=forged)
        slashed = client.get("/ops/", headers=forged)
        extra = client.get("/ops/api/health/", headers=forged)
        djangos = client.post("/signup", headers=forged)
    assert (bare.status_code, bare.headers["location"]) == (302, "/ops/admin")
    assert (slashed.status_code, slashed.headers["location"]) == (302, "/ops/admin")
    assert (extra.status_code, extra.headers.get("location")) == (404, None)
    assert djangos.status_code == 400  # Django's own pages: ALLOWED_HOSTS refuses the host


@pytest.mark.parametrize("project", ["psycopg"], indirect=True)
@pytest.mark.parametrize("form", ["origin", "with prefix"])
def test_signed_twilio_and_qstash_requests_verify_with_either_form_of_the_public_url(
    project: Project, form: str
) -> None:
    """docs/django.md once said CRONTICK_PUBLIC_URL is the origin, docs/deploy/servers.md that it carries the
    prefix: either way, the URL a signature names is the one the sender called, /ops included."""
    from tests.support.credentials import QSTASH_CURRENT, qstash_signature, tick_token
    from tests.support.hooks import twilio_form, twilio_post

    project.migrate()
    port = free_port()
    called = f"http://127.0.0.1:{port}/ops"  # what Twilio and QStash call, and sign
    public = f"http://127.0.0.1:{port}" if form == "origin" else called
    key = QSTASH_CURRENT
    env = {
        "PYTHONPATH": os.pathsep.join((project.env["PYTHONPATH"], str(ROOT))),  # the tests' Twilio hook
        "CRONTICK_HANDLERS": "signups.jobs,tests.support.hooks",
        "CRONTICK_PUBLIC_URL": public,
        "CRONTICK_KICK": "off",
        "QSTASH_CURRENT_SIGNING_KEY": key,
    }
    with project.serve(port=port, **env), httpx.Client(timeout=30) as client:
        hooked = twilio_post(client, called, twilio_form("SMdjango1"), public_url=called)
        ticked = client.post(
            called + "/api/cron/tick",
            headers={"Upstash-Signature": qstash_signature(key, called + "/api/cron/tick", b"")},
        )
        # `crontick token` names CRONTICK_PUBLIC_URL as written, which stays a valid audience.
        token = {"Authorization": f"Bearer {tick_token(TEST_SECRET, public)}"}
        by_token = client.post(called + "/api/cron/tick", headers=token)
        # Signed for the URL without the prefix, which no sender calls: refused in both forms.
        elsewhere = twilio_post(client, called, twilio_form("SMdjango2"), public_url=f"http://127.0.0.1:{port}")
    answers = [r.status_code for r in (hooked, ticked, by_token, elsewhere)]
    assert answers == [200, 200, 200, 401], [r.text for r in (hooked, ticked, by_token, elsewhere)]
    assert project.one("select count(*) from crontick.jobs where type = 't_inbound.record'") == 1
