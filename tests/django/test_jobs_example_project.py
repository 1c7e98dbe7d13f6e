"""examples/django_project, run as a user runs it: manage.py in subprocesses, uvicorn serving its ASGI app, real PostgreSQL.

Each test makes an empty database of the project's own (no template, no search_path, so the SQL
here names `crontick.jobs`), and runs on psycopg 3 (what Django picks whenever it is installed)
and on psycopg2 (the project's `project.psycopg2_backend`, which keeps Django there). crontick's
DATABASE_URL is never set: it comes from Django's DATABASES, as docs/django.md says.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.django.projects import EXAMPLE, HANDLER_UPDATE, Project, wait_until


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


@pytest.mark.parametrize("project", ["psycopg"], indirect=True)
def test_an_async_handler_that_uses_the_async_orm_leaves_no_connection_open(project: Project) -> None:
    project.migrate()
    script = Path(__file__).with_name("async_handler_script.py")
    shell = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "-c", f"import runpy; runpy.run_path({str(script)!r})"],
        cwd=EXAMPLE,
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
