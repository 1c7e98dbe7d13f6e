"""examples/django_project's `manage.py crontick_migrate` and `manage.py test`: migrate --sql, one-line errors, and
Django served without crontick mounted."""

from __future__ import annotations

import json

import pytest

from tests.django.projects import Project
from tests.support.servers import free_port


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
