"""Reminders from the user's own table (CRONTICK_REMINDER_SOURCE): a view over `public.appointments` with its
own column names, a uuid id and a status mapping. Sent exactly once, the source only read (never locked),
a broken source one line from `crontick migrate` and from the tick's reminders (its jobs still run), texts in the
booking's language."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import crontick
from crontick import db
from crontick.errors import ConfigError
from crontick.reminders import send
from crontick.settings import Settings
from crontick.tick.pipeline import run_tick
from tests.support.admin_pages import ADMIN_SECRET
from tests.support.constants import TEST_SECRET
from tests.support.reminders import (
    NOW,
    Provider,
    Received,
    fail_first,
    ok,
    settings_for,
    settings_values,
    tick,
    unsent,
)
from tests.support.run_cli import cli_env
from tests.support.run_cli import crontick as run_crontick
from tests.support.tick_worker import RACE_TIME_BUDGET_SECONDS, Workers
from tests.support.wire import traced

SOURCE = "public.appointments_for_crontick"
SOURCE_PARTS = ("public", "appointments_for_crontick")
# The app's own table: its own names, a uuid id, its own statuses; the view maps them onto crontick's columns.
APPOINTMENTS = """
create table public.appointments (
    uid uuid primary key default gen_random_uuid(),
    client text not null,
    mail text,
    mobile text,
    begins timestamptz not null,
    tz text,
    state text not null default 'booked' check (state in ('booked', 'cancelled_by_client', 'no_show')),
    lang text
);
create index appointments_begins on public.appointments (begins);
"""
VIEW = """
create view public.appointments_for_crontick with (security_invoker = true) as
select uid as id, client as customer_name, mail as email, mobile as phone, begins as starts_at, tz as time_zone,
       case state when 'booked' then 'confirmed' else 'cancelled' end as status, lang as language
from public.appointments
"""
VIEW_WITHOUT_PHONE = """
create view public.appointments_for_crontick with (security_invoker = true) as
select uid as id, client as customer_name, mail as email, begins as starts_at, tz as time_zone,
       case state when 'booked' then 'confirmed' else 'cancelled' end as status
from public.appointments
"""

# The view above, with the booking of 'Two Mails' repeated under a second address, and once without its id.
VIEW_REPEATING = """
create view public.appointments_for_crontick with (security_invoker = true) as
select uid as id, client as customer_name, mail as email, mobile as phone, begins as starts_at, tz as time_zone,
       case state when 'booked' then 'confirmed' else 'cancelled' end as status, lang as language
from public.appointments
union all
select uid, client, 'second.' || mail, mobile, begins, tz, 'confirmed', lang
from public.appointments where client = 'Two Mails'
union all  -- and a row without an id (an outer join's), which cannot be keyed: no reminder, no failed tick
select null, client || ' (no id)', mail, mobile, begins, tz, 'confirmed', lang
from public.appointments where client = 'Two Mails'
"""


@pytest.fixture
def appointments(database_url: str, conn: psycopg.Connection[Any]) -> str:
    """The app's table and its view, and crontick migrated with the view as its reminder source."""
    conn.execute(APPOINTMENTS)
    conn.execute(VIEW)
    asyncio.run(db.migrate(database_url, source=SOURCE_PARTS))
    return database_url


def book(
    conn: psycopg.Connection[Any],
    client: str,
    begins: datetime,
    *,
    state: str = "booked",
    lang: str | None = None,
    tz: str | None = "Europe/Amsterdam",
) -> str:
    row = conn.execute(
        "insert into public.appointments (client, mail, mobile, begins, tz, state, lang)"
        " values (%s, %s, '+31612345678', %s, %s, %s, %s) returning uid",
        (client, client.lower().replace(" ", ".") + "@example.com", begins, tz, state, lang),
    ).fetchone()
    assert row is not None
    return str(row[0])


def own(url: str, provider: Provider, channel: str = "email", **changes: Any) -> Settings:
    return settings_for(url, provider, channel, reminder_source=SOURCE, **changes)


def booking_ids(conn: psycopg.Connection[Any]) -> Counter[tuple[str, str]]:
    rows = conn.execute("select booking_id, kind from crontick.reminder_sends").fetchall()
    return Counter((r[0], r[1]) for r in rows)


def test_the_setting_is_a_schema_qualified_name_or_a_one_line_error() -> None:
    assert Settings.from_env({"CRONTICK_REMINDER_SOURCE": "public.Appointments"}).reminder_source_parts == (
        "public",
        "appointments",
    )
    assert Settings.from_env({"CRONTICK_REMINDER_SOURCE": '"Sales"."My view"'}).reminder_source_parts == (
        "Sales",
        "My view",
    )
    assert Settings.from_env({}).reminder_source_parts == ("crontick", "bookings")
    for bad in ("appointments", "public.appointments; drop table jobs", "a.b.c", 'public."x', "public.", "1x.y"):
        with pytest.raises(ConfigError) as caught:
            Settings.from_env({"CRONTICK_REMINDER_SOURCE": bad})
        assert str(caught.value).startswith("CRONTICK_REMINDER_SOURCE: expected a schema-qualified table or view")
        assert "\n" not in str(caught.value)


def test_reminders_come_from_the_view_once_each_over_repeated_ticks(
    appointments: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    due = [book(conn, f"Client {n}", NOW + timedelta(hours=n)) for n in (2, 5, 20)]
    book(conn, "Cancelled Client", NOW + timedelta(hours=3), state="cancelled_by_client")
    book(conn, "No Show", NOW + timedelta(hours=4), state="no_show")
    book(conn, "Next Week", NOW + timedelta(days=7))
    settings = own(appointments, provider, "webhook")
    for n in range(3):
        result = tick(appointments, settings, NOW + timedelta(minutes=n))
        assert result.reminders.sent == (3 if n == 0 else 0)
    bodies = [r.json["data"]["booking"] for r in provider.requests]
    assert sorted(b["id"] for b in bodies) == sorted(due)  # the uuid, as text
    assert {b["customer_name"] for b in bodies} == {"Client 2", "Client 5", "Client 20"}
    assert booking_ids(conn) == Counter((i, "24h") for i in due)
    assert sorted(provider.keys()) == sorted(f"reminder:{i}:24h" for i in due)
    # Nothing was copied into crontick's own bookings, and the app's rows are as the app left them.
    assert conn.execute("select count(*) from crontick.bookings").fetchone() == (0,)
    assert conn.execute("select count(*) from public.appointments where state = 'booked'").fetchone() == (4,)


def test_ticking_processes_at_once_send_each_reminder_from_the_view_once(
    appointments: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    conn.execute(
        "insert into public.appointments (client, mail, begins, tz)"
        " select 'Client ' || g, 'c' || g || '@example.com', %s + g * interval '10 minutes', 'Europe/Madrid'"
        " from generate_series(1, 120) g",
        (NOW,),
    )
    ids = [str(r[0]) for r in conn.execute("select uid from public.appointments").fetchall()]
    race = {"batch_size": 15, "concurrency": 4, "time_budget_seconds": RACE_TIME_BUDGET_SECONDS}
    values = settings_values(appointments, provider.url, "email", reminder_source=SOURCE, **race)
    Workers(4, values, NOW, "drain").finish(sent=120, unsent=lambda: unsent(conn, ids))
    assert Counter(provider.keys()) == Counter(f"reminder:{i}:24h" for i in ids)  # 120 requests, none twice
    assert booking_ids(conn) == Counter((i, "24h") for i in ids)


def test_the_claim_takes_no_lock_on_the_source(appointments: str, conn: psycopg.Connection[Any]) -> None:
    """The claim statement inside an open transaction: the app's own updates and row locks go through."""
    first = book(conn, "Ada Lovelace", NOW + timedelta(hours=2))
    book(conn, "Grace Hopper", NOW + timedelta(hours=3))
    settings = Settings(database_url=appointments, reminder_source=SOURCE)

    async def go() -> None:
        claimer = await db.connect(appointments)
        try:
            async with claimer.transaction():
                claimed, lost_race = await send.claim(claimer, settings, NOW)
                assert not lost_race
                assert [c.booking_id for c in claimed][0] == first and len(claimed) == 2
                pid = claimer.info.backend_pid
                with psycopg.connect(appointments, autocommit=True) as app:
                    # Only the lock any read takes: a FOR UPDATE on the view would show RowShareLock here.
                    modes = app.execute(
                        "select mode from pg_locks where pid = %s and relation = 'public.appointments'::regclass",
                        (pid,),
                    ).fetchall()
                    assert modes == [("AccessShareLock",)]
                    with app.transaction():
                        app.execute("set local lock_timeout = '500ms'")
                        app.execute("select * from public.appointments for update")  # LockNotAvailable if locked
                        app.execute("update public.appointments set client = client || '!', state = 'no_show'")
        finally:
            await claimer.close()

    asyncio.run(go())


def test_the_app_updates_its_rows_while_a_tick_is_sending(
    appointments: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    """A tick in another process, held mid-send by the provider: the app's updates are not blocked."""
    ids = [book(conn, f"Client {n}", NOW + timedelta(hours=n)) for n in (1, 2, 3)]
    blocker = Blocker()
    provider.behave = blocker
    values = settings_values(appointments, provider.url, "email", concurrency=1, reminder_source=SOURCE)
    workers = Workers(1, values, NOW, "once")
    try:
        assert blocker.held.wait(60), "the tick never reached its provider"
        with psycopg.connect(appointments, autocommit=True) as app, app.transaction():
            app.execute("set local lock_timeout = '500ms'")
            updated = app.execute(
                "update public.appointments set begins = begins + interval '1 minute' where uid = any(%s::uuid[])",
                (ids,),
            )
            assert updated.rowcount == 3
    finally:
        blocker.released.set()
    [result] = workers.finish()
    assert result.sent == 3
    assert Counter(provider.keys()) == Counter(f"reminder:{i}:24h" for i in ids)


class Blocker:
    """Provider behaviour: hold the first request until released."""

    def __init__(self) -> None:
        self.held = threading.Event()
        self.released = threading.Event()

    def __call__(self, received: Received, n: int) -> Any:
        self.held.set()
        self.released.wait(30)
        return ok(received, n)


def test_a_source_missing_a_column_or_absent_is_one_line_from_migrate(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(APPOINTMENTS)
    conn.execute(VIEW_WITHOUT_PHONE)
    env = cli_env(database_url, CRONTICK_REMINDER_SOURCE=SOURCE)
    missing = run_crontick("migrate", env=env)
    assert missing.returncode == 1, missing
    [line] = missing.stderr.splitlines()
    assert line.startswith(f"crontick: error: CRONTICK_REMINDER_SOURCE {SOURCE}: expected a column phone, got:")
    absent = run_crontick("migrate", env={**env, "CRONTICK_REMINDER_SOURCE": "public.no_such_view"})
    assert absent.returncode == 1
    assert absent.stderr.splitlines() == [
        "crontick: error: CRONTICK_REMINDER_SOURCE public.no_such_view: expected a table or view crontick can read, "
        "got: no such table or view"
    ]
    # A bad source leaves the functions as they were: the default source still ticks.
    assert tick(database_url, Settings(database_url=database_url), NOW).reminders.sent == 0
    conn.execute("drop view public.appointments_for_crontick")
    conn.execute(VIEW)
    done = run_crontick("migrate", env=env)
    assert (done.returncode, done.stdout.splitlines()) == (
        0,
        ["up to date", f"reminder source: switched from crontick.bookings to {SOURCE}"],
    ), done


JOB_TYPE = "own_source_job"  # a job that has nothing to do with reminders, run while they are stopped
ran: list[int] = []


@crontick.handler(JOB_TYPE)
def record_run(payload: dict[str, Any], job: crontick.Job) -> None:
    ran.append(payload["n"])


def test_a_broken_or_unreadable_source_stops_reminders_only_the_tick_answers_200_naming_it(
    appointments: str, admin_url: str, conn: psycopg.Connection[Any], provider: Provider, live_app: Any
) -> None:
    book(conn, "Ada Lovelace", datetime.now(UTC) + timedelta(hours=2))  # the HTTP tick runs on the real clock
    # The app drops and re-creates its view without phone after crontick migrated (no dependency held it).
    conn.execute("drop view public.appointments_for_crontick")
    conn.execute(VIEW_WITHOUT_PHONE)
    ran.clear()
    crontick.enqueue(conn, JOB_TYPE, {"n": 1})
    cron = {"Authorization": f"Bearer {TEST_SECRET}"}
    with live_app(own(appointments, provider)) as base:
        response = httpx.post(base + "/api/cron/tick", headers=cron, timeout=30)
        health = httpx.get(base + "/api/health", timeout=30)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["jobs"]["succeeded"] == 1 and ran == [1]  # the jobs ran
    assert (body["reminders"]["sent"], body["reminders"]["failed"]) == (0, 0)
    assert body["reminders"]["error"].startswith(f"CRONTICK_REMINDER_SOURCE {SOURCE}: expected a column phone, got:")
    assert "Traceback" not in response.text and "\n" not in body["reminders"]["error"]
    assert health.status_code == 200 and health.json()["reminders_error"] == body["reminders"]["error"]
    assert provider.requests == []

    conn.execute("drop view public.appointments_for_crontick")
    conn.execute(VIEW)
    crontick.enqueue(conn, JOB_TYPE, {"n": 2})
    with runtime_role(appointments) as role_url, live_app(own(role_url, provider)) as base:
        response = httpx.post(base + "/api/cron/tick", headers=cron, timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["reminders"]["error"] == (
        f"CRONTICK_REMINDER_SOURCE {SOURCE}: expected SELECT on column id for this role, got: permission denied for id"
    )
    assert response.json()["jobs"]["succeeded"] == 1 and ran == [1, 2]
    assert provider.requests == []

    # A view gone altogether (dropped, or not created yet by the app's migration): the same.
    conn.execute("drop view public.appointments_for_crontick")
    crontick.enqueue(conn, JOB_TYPE, {"n": 3})
    result = tick(appointments, own(appointments, provider), datetime.now(UTC))
    assert result.jobs.succeeded == 1 and ran == [1, 2, 3]
    assert result.reminders.error == (
        f"CRONTICK_REMINDER_SOURCE {SOURCE}: expected a table or view crontick can read, got: no such table or view"
    )
    # Fixed: the next tick sends the reminder.
    conn.execute(VIEW)
    assert tick(appointments, own(appointments, provider), datetime.now(UTC)).reminders.sent == 1


@contextmanager
def runtime_role(url: str) -> Iterator[str]:
    """A login role with docs/security.md's runtime privileges on crontick's schema, and none on the source."""
    name = f"ct_runtime_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    ident = sql.Identifier(name)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(sql.SQL("create role {} login bypassrls").format(ident))
        for grant in (
            "grant usage on schema crontick to {}",
            "grant all on all tables in schema crontick to {}",
            "grant all on all sequences in schema crontick to {}",
            "grant execute on all functions in schema crontick to {}",
        ):
            admin.execute(sql.SQL(grant).format(ident))
    try:
        yield make_conninfo(url, user=name)
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("select pg_terminate_backend(pid) from pg_stat_activity where usename = %s", (name,))
            admin.execute(sql.SQL("drop owned by {}").format(ident))
            admin.execute(sql.SQL("drop role {}").format(ident))


def test_a_process_on_another_source_than_migrate_built_the_probe_for_sends_no_reminders_but_runs_jobs(
    appointments: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    book(conn, "Ada Lovelace", NOW + timedelta(hours=2))
    ran.clear()
    crontick.enqueue(conn, JOB_TYPE, {"n": 1}, run_after=NOW - timedelta(minutes=1))
    result = tick(appointments, settings_for(appointments, provider), NOW)  # the default source: crontick.bookings
    assert result.jobs.succeeded == 1 and ran == [1]
    assert result.reminders.error == (
        f"CRONTICK_REMINDER_SOURCE: expected {SOURCE}, the source crontick migrate last ran with, got: "
        "crontick.bookings (run crontick migrate with this setting)"
    )
    assert result.to_json()["reminders"]["error"] == result.reminders.error
    assert provider.requests == []


def test_migrate_says_what_it_changed_and_switches_back_to_crontick_bookings_only_when_told(
    appointments: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    without = cli_env(appointments)  # a release step without the app's environment
    kept = run_crontick("migrate", env=without)
    assert kept.returncode == 0, kept
    assert kept.stdout.splitlines() == [
        "up to date",
        f"reminder source: kept {SOURCE} (CRONTICK_REMINDER_SOURCE is not set here; to read crontick's own table "
        "again: crontick migrate --reminder-source crontick.bookings)",
    ]
    book(conn, "Ada Lovelace", NOW + timedelta(hours=2))
    assert tick(appointments, own(appointments, provider), NOW).reminders.sent == 1  # still reading the view

    back = run_crontick("migrate", "--reminder-source", "crontick.bookings", env=without)
    assert back.returncode == 0, back
    assert back.stdout.splitlines() == ["up to date", f"reminder source: switched from {SOURCE} to crontick.bookings"]
    again = run_crontick("migrate", env=cli_env(appointments, CRONTICK_REMINDER_SOURCE=SOURCE))
    assert again.stdout.splitlines() == ["up to date", f"reminder source: switched from crontick.bookings to {SOURCE}"]
    bad = run_crontick("migrate", "--reminder-source", "no-dot", env=without)
    assert bad.returncode == 2 and "expected a schema-qualified table or view" in bad.stderr


# A language crontick ships no words for, declared as an app would in a CRONTICK_HANDLERS module.
crontick.reminder_template(
    "24h",
    "de",
    subject="Erinnerung: Ihr Termin {day} um {time}",
    text="Hallo {first_name}, Ihr Termin ist {day}, {date} um {time} ({zone}).",
    words=crontick.ReminderWords(
        "heute",
        "morgen",
        "in {n} Tagen",
        ("Mo", "Di", "Mi", "Do", "Fr", "Sa", "So"),
        ("Jan", "Feb", "Mär", "Apr", "Mai", "Jun", "Jul", "Aug", "Sep", "Okt", "Nov", "Dez"),
        date="{weekday}, {day}. {month}",
        zone="Zeitzone {city}",
    ),
)


def test_each_booking_gets_the_text_of_its_language_english_otherwise(
    appointments: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    starts = datetime.fromisoformat("2026-12-01T09:00:00+00:00")  # Tuesday, 10:00 in Amsterdam and Madrid
    names = {
        book(conn, "Daan de Vries", starts, lang="nl"): "nl",
        book(conn, "Lucía García", starts + timedelta(seconds=1), lang="es-MX", tz="Europe/Madrid"): "es",
        book(conn, "Ada Lovelace", starts + timedelta(seconds=2), lang=None): "none",
        book(conn, "Amélie Poulain", starts + timedelta(seconds=3), lang="fr"): "fr",
        book(conn, "Jonas Müller", starts + timedelta(seconds=4), lang="DE_at", tz="Europe/Berlin"): "de",
    }
    assert tick(appointments, own(appointments, provider), NOW).reminders.sent == 5
    sent = {names[r.headers["idempotency-key"].split(":")[1]]: r.json for r in provider.requests}
    assert {k: (v["subject"], v["text"]) for k, v in sent.items()} == {
        "nl": (
            "Herinnering: uw afspraak morgen om 10:00",
            "Hallo Daan, een herinnering: uw afspraak is morgen, di 1 dec om 10:00 (tijdzone Amsterdam).",
        ),
        "es": (
            "Recordatorio: su cita mañana a las 10:00",
            "Hola Lucía, le recordamos su cita mañana, mar 1 dic a las 10:00 (hora de Madrid).",
        ),
        "none": (
            "Reminder: your appointment tomorrow at 10:00",
            "Hi Ada, a reminder: your appointment is tomorrow, Tue 1 Dec at 10:00 (Amsterdam time).",
        ),
        "fr": (
            "Reminder: your appointment tomorrow at 10:00",
            "Hi Amélie, a reminder: your appointment is tomorrow, Tue 1 Dec at 10:00 (Amsterdam time).",
        ),
        "de": (
            "Erinnerung: Ihr Termin morgen um 10:00",
            "Hallo Jonas, Ihr Termin ist morgen, Di, 1. Dez um 10:00 (Zeitzone Berlin).",
        ),
    }
    assert sent["nl"]["to"] == ["daan.de.vries@example.com"]


def test_a_template_for_a_variable_that_is_no_plain_name_is_refused_when_declared() -> None:
    """A plain name that is neither crontick's nor a column is refused against the source (tests/reminders/test_templates_columns.py)."""
    with pytest.raises(ConfigError) as caught:
        crontick.reminder_template("24h", "pt", subject="Lembrete {dia.hoje}", text="Olá {first_name}")
    assert "{dia.hoje}" in str(caught.value)
    with pytest.raises(ConfigError):
        crontick.reminder_template("tomorrow", "pt", subject="Lembrete", text="Olá")


def test_the_admin_retries_a_failed_reminder_named_by_the_sources_uuid(
    appointments: str, conn: psycopg.Connection[Any], provider: Provider, live_app: Any
) -> None:
    """POST /api/admin/reminders/{booking_id}/{kind}/retry over real HTTP, the booking id a uuid (text)."""
    booking = book(conn, "Ada Lovelace", datetime.now(UTC) + timedelta(hours=2))
    provider.behave = fail_first(1, status=422)  # a 4xx: failed at once, for a person to retry
    settings = own(appointments, provider, admin_secret=ADMIN_SECRET)
    admin = {"Authorization": f"Bearer {ADMIN_SECRET}"}
    cron = {"Authorization": f"Bearer {TEST_SECRET}"}
    with live_app(settings) as base, httpx.Client(base_url=base, timeout=30) as client:
        assert client.post("/api/cron/tick", headers=cron).json()["reminders"]["failed"] == 1
        listed = client.get("/api/admin/reminders?status=failed", headers=admin).json()["reminders"]
        assert [(r["booking_id"], r["customer_name"]) for r in listed] == [(booking, "Ada Lovelace")]
        retried = client.post(f"/api/admin/reminders/{booking}/24h/retry", headers=admin)
        assert retried.status_code == 200, retried.text
        assert retried.json()["booking_id"] == booking and retried.json()["status"] == "failed"
        unknown = client.post(f"/api/admin/reminders/{uuid.uuid4()}/24h/retry", headers=admin)
        assert unknown.status_code == 404
        assert client.post("/api/cron/tick", headers=cron).json()["reminders"]["sent"] == 1
        sent = client.post(f"/api/admin/reminders/{booking}/24h/retry", headers=admin)
        assert sent.status_code == 409  # sent: nothing to retry
    assert provider.keys() == [f"reminder:{booking}:24h"] * 2


def test_a_source_that_repeats_a_booking_id_or_lacks_one_still_sends_each_reminder_once(
    appointments: str, conn: psycopg.Connection[Any], provider: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    """A view that joins a booking to each of its contacts repeats the booking's id: one reminder, to one of them.
    A row without an id gets none, and the others still go out."""
    twice = book(conn, "Two Mails", NOW + timedelta(hours=2))
    once = book(conn, "One Mail", NOW + timedelta(hours=3))
    conn.execute("drop view public.appointments_for_crontick")
    conn.execute(VIEW_REPEATING)
    settings = own(appointments, provider, "email")
    with caplog.at_level(logging.WARNING, logger="crontick"):
        first = tick(appointments, settings, NOW)
    later, statements = traced(appointments, lambda c: run_tick(c, settings, now=NOW + timedelta(minutes=1)))
    assert later.reminders.sent == 0 and statements == ["tick_probe"]  # the row without an id is never due
    assert sorted(provider.keys()) == sorted(f"reminder:{i}:24h" for i in (twice, once))  # none twice
    assert first.reminders.sent == 2
    warnings = [r.getMessage() for r in caplog.records if "reminder_source_repeats_id" in r.getMessage()]
    assert len(warnings) == 1 and f'"booking_ids": ["{twice}"]' in warnings[0]
    assert booking_ids(conn) == Counter((i, "24h") for i in (twice, once))
