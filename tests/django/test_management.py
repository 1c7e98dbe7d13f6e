"""Every `crontick` command as `manage.py crontick_<name>`: the same options, Django's database, handlers that import models."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.django.projects import project_database
from tests.support.constants import ROOT

PROJECT = ROOT / "examples" / "django_project"
TEXT: dict[str, Any] = {"capture_output": True, "text": True, "timeout": 120}
COMMANDS = ROOT / "lib" / "crontick" / "django" / "management" / "commands"


@pytest.fixture(scope="module")
def management() -> object:
    """crontick.django.management, imported with Django configured as a minimal project would (no database used)."""
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(INSTALLED_APPS=[], DATABASES={})  # not crontick.django: its ready() registers a channel
        django.setup()
    from crontick.django import management as module

    return module


def django_parser(management: object, cli_name: str) -> argparse.ArgumentParser:
    command = management.command(cli_name)()  # type: ignore[attr-defined]
    return command.create_parser("manage.py", management.command_name(cli_name))  # type: ignore[no-any-return,attr-defined]


def test_every_cli_command_has_a_management_command_and_nothing_else_is_there(management: object) -> None:
    names = set(management.cli_subcommands())  # type: ignore[attr-defined]
    assert {"migrate", "tick", "jobs", "schedules", "enqueue", "rate-limits"} <= names
    expected = {management.command_name(n) + ".py" for n in names} | {"__init__.py"}  # type: ignore[attr-defined]
    assert {p.name for p in COMMANDS.glob("*.py")} == expected
    for name in names:
        module = COMMANDS / (management.command_name(name) + ".py")  # type: ignore[attr-defined]
        assert f'Command = command("{name}")' in module.read_text(), module


@pytest.mark.parametrize(
    "argv",
    [
        ["enqueue", "send_welcome_email", "--payload", '{"a": 1}', "--key", "k", "--max-attempts", "3"],
        ["enqueue", "webhook", "--run-after", "2030-12-01T09:00:00+01:00", "--priority", "-5"],
        ["jobs", "--status", "failed", "--limit", "7", "--json"],
        ["retry", "17"],
        ["pause", "type", "send_welcome_email", "--json"],
        ["hook-sign", "http://127.0.0.1:8000/api/hooks/whatsapp", "-d", "From=x", "-d", "Body=hi"],
        ["schedules", "--from", "2026-10-24T22:00Z", "--until", "2026-10-25T03:00Z", "--json"],
        ["schedules", "pause", "nightly"],
        ["tick", "--drain"],
        ["migrate", "--sql", "--after", "0010"],
        ["token", "--audience", "https://a.example", "--ttl", "30"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_what_manage_py_parses_is_handed_to_the_cli_as_the_cli_parses_it(management: object, argv: list[str]) -> None:
    from crontick.cli import main

    name, rest = argv[0], argv[1:]
    options = vars(django_parser(management, name).parse_args(rest))
    handed = [name, *management._argv(management.command(name).cli_actions, options)]  # type: ignore[attr-defined]
    expected, got = vars(main._parser().parse_args(argv)), vars(main._parser().parse_args(handed))
    assert got == expected


def test_options_not_given_stay_out_so_the_cli_applies_its_own_defaults(management: object) -> None:
    options = vars(django_parser(management, "jobs").parse_args([]))
    assert not {"status", "limit", "json", "cursor"} & set(options)


@pytest.mark.slow
def test_jobs_stats_pause_and_schedules_run_on_django_s_database_with_handlers_that_import_models(
    admin_url: str, tmp_path: Path
) -> None:
    (tmp_path / "nightly_jobs.py").write_text(
        "import crontick\nfrom signups.models import Signup  # a model: only importable once Django is set up\n\n"
        "@crontick.handler('nightly_count')\ndef nightly_count(job):\n    return Signup.objects.count()\n\n"
        "crontick.schedule('nightly', '0 3 * * *', 'nightly_count')\n"
    )
    with project_database(admin_url, PROJECT, "project.settings", CRONTICK_HANDLERS="nightly_jobs") as (_, env):
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
        assert "DATABASE_URL" not in env

        def manage(*args: str) -> subprocess.CompletedProcess[str]:
            done = subprocess.run(
                [sys.executable, "manage.py", *args], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, done.stderr
            return done

        manage("migrate", "-v", "0")
        assert manage("crontick_enqueue", "nightly_count", "--key", "k1", "--max-attempts", "3").stdout.strip() == "1"
        (job,) = json.loads(manage("crontick_jobs", "--status", "pending", "--json").stdout)["jobs"]
        assert (job["type"], job["key"], job["max_attempts"]) == ("nightly_count", "k1", 3)
        assert manage("crontick_pause", "type", "nightly_count").stdout.strip() == "type nightly_count is paused"
        assert "pending           1" in manage("crontick_stats").stdout
        (schedule,) = json.loads(manage("crontick_schedules", "--json").stdout)
        assert (schedule["name"], schedule["job_type"]) == ("nightly", "nightly_count")
        bad = subprocess.run([sys.executable, "manage.py", "crontick_retry", "abc"], cwd=PROJECT, env=env, **TEXT)
        assert bad.returncode == 2 and "invalid int value: 'abc'" in bad.stderr
        plain = subprocess.run([sys.executable, "-m", "crontick.cli", "schedules"], cwd=PROJECT, env=env, **TEXT)
        assert plain.returncode != 0 and "nightly_jobs" in plain.stderr  # the plain CLI cannot: Django is not set up
