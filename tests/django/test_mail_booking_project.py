"""crontick.django.mail, the `django` reminder channel, in tests/django/booking_project: a reminder from the app's
view goes out through Django's EMAIL_BACKEND to a real SMTP server on loopback, once, with the view's columns."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from tests.django.projects import Site
from tests.support import smtp


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
    before = datetime.now(UTC)
    when = before + timedelta(hours=2)
    appointment = site.book("Ada Lovelace", when)
    with smtp.smtp_server() as (port, server):
        ticked = site.django("crontick_tick", SMTP_PORT=str(port), **templates)
        after = datetime.now(UTC)
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
    # {day} counts in the site's TIME_ZONE (UTC) from the claim, somewhere between `before` and `after`:
    # booked two hours ahead after 22:00, the appointment is tomorrow.
    days = {"today" if when.date() == moment.date() else "tomorrow" for moment in (before, after)}
    assert any(text.startswith(f"Hi Ada, your Haircut is {day} at ") for day in days), text
    assert text.strip().endswith(f"Move it: {link}")
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
