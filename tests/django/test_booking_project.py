"""tests/django/booking_project, a small multi-app booking site run as its users run it: `python -m django` in
subprocesses against a fresh PostgreSQL database each, its reminders from a view another app's migration creates.

The view's app is `aviews` (migrated before crontick, as Django orders unrelated apps by label) or
`zviews` (after it): a fresh `migrate` must work both ways (issue 38, finding 1).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from tests.django.projects import project_database
from tests.support import smtp
from tests.support.constants import ROOT

PROJECT = ROOT / "tests" / "django" / "booking_project"
SOURCE = "public.salon_reminders"


@dataclass
class Site:
    url: str
    env: dict[str, str]

    def django(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "django", *args],
            cwd=PROJECT,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )

    def book(self, name: str, starts_at: datetime) -> int:
        with psycopg.connect(self.url, autocommit=True) as conn:
            service = conn.execute("insert into salon_service (name) values ('Haircut') returning id").fetchone()
            customer = conn.execute(
                "insert into salon_customer (name, email, phone) values (%s, %s, '') returning id",
                (name, name.lower().replace(" ", ".") + "@example.com"),
            ).fetchone()
            assert service is not None and customer is not None
            row = conn.execute(
                "insert into salon_appointment (customer_id, service_id, starts_at, cancelled)"
                " values (%s, %s, %s, false) returning id",
                (customer[0], service[0], starts_at),
            ).fetchone()
        assert row is not None
        return int(row[0])


@pytest.fixture
def site(admin_url: str) -> Iterator[Site]:
    with project_database(
        admin_url,
        PROJECT,
        "booking_site.settings",
        CRONTICK_REMINDER_SOURCE=SOURCE,
        CRONTICK_REMINDER_CHANNEL="console",
    ) as (url, env):
        yield Site(url, env)


@pytest.mark.parametrize("view_app", ["aviews", "zviews"])
def test_a_fresh_migrate_works_whichever_app_creates_the_view_and_the_first_tick_reads_it(
    site: Site, view_app: str
) -> None:
    done = site.django("migrate", REMINDER_VIEW_APP=view_app)
    assert done.returncode == 0, done.stderr
    check = site.django("check", REMINDER_VIEW_APP=view_app)
    assert check.returncode == 0 and "crontick.W001" not in check.stderr + check.stdout, check
    site.book("Ada Lovelace", datetime.now(UTC) + timedelta(hours=2))
    ticked = site.django("crontick_tick", REMINDER_VIEW_APP=view_app)
    assert ticked.returncode == 0, ticked.stderr
    summary = json.loads(ticked.stdout.strip().splitlines()[-1])
    assert summary["reminders"]["sent"] == 1, ticked.stdout


def test_a_source_no_migration_creates_is_a_warning_from_migrate_and_check_not_a_failure(site: Site) -> None:
    missing = {"CRONTICK_REMINDER_SOURCE": "public.no_such_view"}
    done = site.django("migrate", **missing)
    assert done.returncode == 0, done.stderr
    assert (
        "crontick: warning: CRONTICK_REMINDER_SOURCE public.no_such_view: expected a table or view crontick can read, "
        "got: no such table or view"
    ) in done.stderr
    check = site.django("check", **missing)
    assert check.returncode == 0, check.stderr
    assert "(crontick.W001) CRONTICK_REMINDER_SOURCE public.no_such_view: expected a table or view" in check.stderr


PROBE = """
import os
from django.test import Client
response = Client().post(os.environ["PROBE_PATH"], HTTP_HOST="127.0.0.1")
print(response.status_code, response.json()["error"])
try:
    import booking_site.asgi
    from crontick.django.asgi import urlconf_prefix
    print("mounted at", urlconf_prefix())
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_crontick_inside_i18n_patterns_is_refused_plainly_and_outside_it_mounts_without_a_language(
    site: Site,
) -> None:
    inside = site.django(
        "shell", "-c", PROBE, BOOKING_URLCONF="booking_site.urls_inside", PROBE_PATH="/fr/ops/api/cron/tick"
    )
    assert inside.returncode == 0, inside.stderr
    lines = inside.stdout.splitlines()[-2:]  # after Django 5.2's line on the shell's automatic imports
    assert lines[0] == "503 inside_i18n_patterns"
    assert lines[1].startswith("ImproperlyConfigured crontick: crontick's URL line, path('ops/', include(")
    assert "is inside i18n_patterns" in lines[1] and "put the line outside i18n_patterns" in lines[1]
    outside = site.django("shell", "-c", PROBE, PROBE_PATH="/ops/api/cron/tick")
    assert outside.returncode == 0, outside.stderr
    assert outside.stdout.splitlines()[-2:] == ["503 not_mounted", "mounted at /ops"]  # Django itself is not mount()


@pytest.mark.parametrize("view_app", ["aviews", "zviews"])
def test_a_reminder_goes_out_through_djangos_email_backend_with_the_views_columns_in_text_and_html(
    site: Site, view_app: str
) -> None:
    """The django channel: EMAIL_BACKEND (Django's SMTP backend, to a real server on loopback) and
    DEFAULT_FROM_EMAIL, the view's `service` and `reschedule_url` in the text and the (autoescaped) HTML part."""
    templates = {
        "CRONTICK_REMINDER_CHANNEL": "django",
        "CRONTICK_REMINDER_TEMPLATE": "Hi {first_name}, your {service} is {day} at {time}. Move it: {reschedule_url}",
        "CRONTICK_REMINDER_HTML_TEMPLATE": '<p>{{ service }}: <a href="{{ reschedule_url }}">move it</a></p>',
        "REMINDER_VIEW_APP": view_app,
    }
    done = site.django("migrate", **templates)
    assert done.returncode == 0, done.stderr
    appointment = site.book("Ada Lovelace", datetime.now(UTC) + timedelta(hours=2))
    with smtp.smtp_server() as (port, server):
        ticked = site.django("crontick_tick", SMTP_PORT=str(port), **templates)
        assert ticked.returncode == 0, ticked.stderr
        assert json.loads(ticked.stdout.strip().splitlines()[-1])["reminders"]["sent"] == 1, ticked.stdout
        again = site.django("crontick_tick", SMTP_PORT=str(port), **templates)
        assert json.loads(again.stdout.strip().splitlines()[-1])["reminders"]["sent"] == 0  # exactly once
    [taken] = server.taken
    mail = taken.message
    assert (taken.mail_from, taken.rcpt_tos) == ("salon@example.com", ["ada.lovelace@example.com"])
    assert mail["Message-ID"].startswith("<crontick.") and mail["Message-ID"].endswith("@example.com>")
    assert mail["Idempotency-Key"] == f"reminder:{appointment}:24h"
    text, page = (part.get_content() for part in mail.iter_parts())
    link = f"https://salon.example/reschedule/{appointment}"
    assert text.startswith("Hi Ada, your Haircut is today at ") and text.strip().endswith(f"Move it: {link}")
    assert page.strip() == f'<p>Haircut: <a href="{link}">move it</a></p>'

    # A 5xx from the server, through Django's SMTP backend: failed at once, the reply in last_error.
    refused = site.book("Bo Refused", datetime.now(UTC) + timedelta(hours=3))
    with smtp.smtp_server() as (port, server):
        server.rcpt_reply = "550 5.1.1 no such mailbox"
        ticked = site.django("crontick_tick", SMTP_PORT=str(port), **templates)
        assert json.loads(ticked.stdout.strip().splitlines()[-1])["reminders"]["failed"] == 1, ticked.stdout
    with psycopg.connect(site.url) as conn:
        row = conn.execute(
            "select status, next_attempt_at, last_error from crontick.reminder_sends where booking_id = %s",
            (str(refused),),
        ).fetchone()
    assert row is not None and row[:2] == ("failed", None) and "550" in row[2], row

    # A variable that is neither crontick's nor a column of the view: migrate warns, check warns, reminders stop.
    typo = {**templates, "CRONTICK_REMINDER_TEMPLATE": "Hi {first_name}, your {servce}"}
    check = site.django("check", **typo)
    assert "(crontick.W001) CRONTICK_REMINDER_SOURCE public.salon_reminders: expected a column for each" in check.stderr
    assert "{servce}, which is neither (the source's columns: id, customer_name, email" in check.stderr
