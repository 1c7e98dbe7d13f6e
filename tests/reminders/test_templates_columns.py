"""Template variables from every column of the reminder source: a view's extra columns ({service},
{reschedule_url}) fill the text and the HTML part; a variable that is neither crontick's nor a column is refused
by `crontick migrate` and stops reminders at the tick (its jobs still run), naming it and the source's columns."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import psycopg
import pytest

import crontick
from crontick import db
from crontick.db.migrate import apply
from crontick.errors import ReminderSourceError
from crontick.reminders import templates
from tests.support.reminders import NOW, Provider, add_bookings, send_of, settings_for, tick

SOURCE = "public.bookings_with_service"
VIEW = """
create view public.bookings_with_service as
select b.*, 'Haircut & beard'::text as service, 'https://salon.example/r/' || b.id as reschedule_url,
       b.starts_at - interval '1 hour' as arrive_by, 3 as chairs
from crontick.bookings b
"""
TEXT = "Hi {first_name}: {service} {day} at {time}. Move it: {reschedule_url} ({chairs} chairs)"
HTML = '<p>{{ service }} — <a href="{{ reschedule_url }}">move it</a></p>'


JOB_TYPE = "templates_columns_job"  # a job unrelated to reminders, run while they are stopped
ran: list[int] = []


@crontick.handler(JOB_TYPE)
def record_run(payload: dict[str, Any], job: crontick.Job) -> None:
    ran.append(payload["n"])


@pytest.fixture
def with_view(database_url: str, conn: psycopg.Connection[Any]) -> str:
    conn.execute(VIEW)
    asyncio.run(db.migrate(database_url, source=("public", "bookings_with_service")))
    return database_url


def book(conn: psycopg.Connection[Any]) -> str:
    [booking] = add_bookings(
        conn, [("Ada Lovelace", "ada@example.com", None, NOW + timedelta(hours=20), "Europe/Amsterdam", "confirmed")]
    )
    return booking


def test_the_sources_own_columns_fill_the_text_and_the_html(
    with_view: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking = book(conn)
    settings = settings_for(
        with_view, provider, reminder_source=SOURCE, reminder_template=TEXT, reminder_html_template=HTML
    )
    assert tick(with_view, settings, NOW).reminders.sent == 1
    [request] = provider.requests
    assert request.json["text"] == (
        f"Hi Ada: Haircut & beard tomorrow at 09:00. Move it: https://salon.example/r/{booking} (3 chairs)"
    )
    assert request.json["html"] == (
        f'<p>Haircut &amp; beard — <a href="https://salon.example/r/{booking}">move it</a></p>'
    )
    assert send_of(conn, booking)["status"] == "sent"


def test_a_variable_that_is_neither_stops_reminders_not_jobs_and_names_the_columns(
    with_view: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    ran.clear()
    crontick.enqueue(conn, JOB_TYPE, {"n": 1}, run_after=NOW - timedelta(minutes=1))
    book(conn)
    settings = settings_for(with_view, provider, reminder_source=SOURCE, reminder_template="Hi {first_name}, {sevice}")
    result = tick(with_view, settings, NOW)
    assert result.reminders.sent == 0 and provider.requests == []
    error = result.reminders.error or ""
    assert error.startswith(f"CRONTICK_REMINDER_SOURCE {SOURCE}: expected a column for each variable")
    assert "{sevice}" in error and "service, reschedule_url, arrive_by, chairs" in error
    assert result.jobs.succeeded == 1 and ran == [1]  # the jobs ran
    assert conn.execute("select count(*) from crontick.reminder_sends").fetchone() == (0,)  # nothing claimed


def test_migrate_refuses_a_variable_that_is_neither(database_url: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute(VIEW)
    with pytest.raises(ReminderSourceError) as caught:
        asyncio.run(apply(database_url, source=("public", "bookings_with_service"), variables={"servce"}))
    assert "{servce}, which is neither (the source's columns: id, customer_name" in str(caught.value)


def test_a_declared_templates_variables_count_and_column_values_read_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(templates, "_templates", dict(templates._templates))
    templates.reminder_template("24h", "pt", subject="Lembrete {servico}", text="Olá", html="<p>{{ sala }}</p>")
    from crontick.settings import Settings

    assert templates.source_names(Settings()) == {"servico", "sala"}
    row = {"service": "Cut", "price": 12.5, "paid": False, "note": None, "extras": ["a"]}
    assert templates.column_values(row) == {
        "service": "Cut",
        "price": "12.5",
        "paid": "false",
        "note": "",
        "extras": '["a"]',
    }
