"""crontick added to an app that already has its own `jobs` and `bookings` tables, on a database with no search_path
(issue 19's "Done when"; CI runs it on the installed wheel too).

`crontick migrate` puts everything into the `crontick` schema and changes nothing in `public`; the host is a
FastAPI app with crontick mounted under /ops, where the tick and the admin answer; jobs enqueued through
psycopg 3, psycopg2, SQLAlchemy (sync and asyncpg) and plain SQL run once each over a real tick, and a
rolled-back enqueue never runs; reminders come from the app's own `appointments` view
(CRONTICK_REMINDER_SOURCE) exactly once; the log handler the host put on the root logger gets the tick line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

import crontick
from crontick import db
from crontick.settings import Settings
from tests.support.admin_pages import ADMIN_SECRET
from tests.support.constants import TEST_SECRET
from tests.support.databases import url_of
from tests.support.reminders import WEBHOOK_SECRET, Provider
from tests.support.servers import serve

HOST_APP_SCHEMA = """
create table public.jobs (id serial primary key, title text not null, company text not null);
create table public.bookings (
    id serial primary key, ref uuid not null unique default gen_random_uuid(), guest text not null,
    email text, starts_at timestamptz not null, cancelled boolean not null default false
);
create index bookings_starts_at on public.bookings (starts_at);
create table public.job_runs (job_id bigint not null, via text not null);
insert into public.jobs (title, company) values ('Barista', 'Cafe Ada'), ('Baker', 'Bakery Bob');
insert into public.bookings (guest, email, starts_at, cancelled) values
    ('Grace Hopper', 'grace@example.com', now() + interval '2 hours', false),
    ('Carl Cancelled', 'carl@example.com', now() + interval '3 hours', true),
    ('Lea Later', 'lea@example.com', now() + interval '3 days', false);
-- The app's reminder source for crontick: its own names mapped onto crontick's, a uuid id, a status mapping.
create view public.appointments with (security_invoker = true) as
select ref as id, guest as customer_name, email, null::text as phone, starts_at, 'Europe/Amsterdam' as time_zone,
       case when cancelled then 'cancelled' else 'confirmed' end as status
from public.bookings;
"""
SOURCE = "public.appointments"
PREFIX = "/ops"
# What crontick must leave alone: every relation, column and row of public.
PUBLIC_SNAPSHOT = """
select (select json_agg(c order by c.table_name, c.ordinal_position) from information_schema.columns c
        where c.table_schema = 'public') as columns,
       (select json_agg(j order by j.id) from public.jobs j) as jobs,
       (select json_agg(b order by b.id) from public.bookings b) as bookings,
       (select json_agg(i.indexname order by i.indexname) from pg_indexes i where i.schemaname = 'public') as indexes
"""


@pytest.fixture
def app_database(admin_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A database of the host app's own, made without the test template, and with no search_path set."""
    name = f"crontick_host_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("create database {}").format(psycopg.sql.Identifier(name)))
    url = make_conninfo(admin_url, dbname=name)
    monkeypatch.setenv("EXISTING_APP_DATABASE_URL", url)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(HOST_APP_SCHEMA)
        yield url
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(
                psycopg.sql.SQL("drop database if exists {} with (force)").format(psycopg.sql.Identifier(name))
            )


def _snapshot(url: str) -> Any:
    with psycopg.connect(url) as conn:
        return conn.execute(PUBLIC_SNAPSHOT).fetchone()


def _sqlalchemy_url(url: str, driver: str) -> Any:
    """The same database as a SQLAlchemy URL; a unix-socket host (the embedded server) goes in the query."""
    from sqlalchemy.engine import URL

    d = conninfo_to_dict(url)
    host, port = str(d.get("host") or ""), int(d.get("port") or 5432)
    if host.startswith("/"):
        return URL.create(
            f"postgresql+{driver}",
            username=str(d["user"]),
            database=str(d["dbname"]),
            query={"host": host, "port": str(port)},
        )
    return URL.create(f"postgresql+{driver}", username=str(d["user"]), host=host, port=port, database=str(d["dbname"]))


def _enqueue_every_way(url: str) -> None:
    """One job committed and one rolled back through each driver; the rolled-back ones must never run."""
    import psycopg2
    import sqlalchemy
    from sqlalchemy.ext.asyncio import create_async_engine

    with psycopg.connect(url) as conn:  # psycopg 3, through the Python API
        crontick.enqueue(conn, "app.note_run", {"via": "psycopg3"})
    with psycopg.connect(url) as conn:
        crontick.enqueue(conn, "app.note_run", {"via": "psycopg3-rolled-back"})
        conn.rollback()
    with psycopg.connect(url) as conn:  # plain SQL, as any language would call it
        conn.execute("select crontick.enqueue('app.note_run', '{\"via\": \"sql\"}'::jsonb, key => 'once')")
        conn.execute("select crontick.enqueue('app.note_run', '{\"via\": \"sql-dup\"}'::jsonb, key => 'once')")
    p2 = psycopg2.connect(url)
    try:
        with p2.cursor() as cur:
            cur.execute("select crontick.enqueue(%s, %s::jsonb)", ("app.note_run", '{"via": "psycopg2"}'))
        p2.commit()
        with p2.cursor() as cur:
            cur.execute("select crontick.enqueue(%s, %s::jsonb)", ("app.note_run", '{"via": "psycopg2-rolled-back"}'))
        p2.rollback()
    finally:
        p2.close()
    engine = sqlalchemy.create_engine(_sqlalchemy_url(url, "psycopg2"))
    call = sqlalchemy.text("select crontick.enqueue(:type, cast(:payload as jsonb))")
    with engine.begin() as c:
        c.execute(call, {"type": "app.note_run", "payload": '{"via": "sqlalchemy"}'})
    with engine.connect() as c:
        c.execute(call, {"type": "app.note_run", "payload": '{"via": "sqlalchemy-rolled-back"}'})
        c.rollback()
    engine.dispose()

    async def with_asyncpg() -> None:
        aengine = create_async_engine(_sqlalchemy_url(url, "asyncpg"))
        async with aengine.begin() as c:
            await c.execute(call, {"type": "app.note_run", "payload": '{"via": "asyncpg"}'})
        async with aengine.connect() as c:
            await c.execute(call, {"type": "app.note_run", "payload": '{"via": "asyncpg-rolled-back"}'})
            await c.rollback()
        await aengine.dispose()

    asyncio.run(with_asyncpg())


class HostLog(logging.Handler):
    """The host app's own log handler on the root logger (its Sentry or log shipper, say)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def ticks(self) -> list[dict[str, Any]]:
        events = [json.loads(m) for m in self.messages if m.startswith("{")]
        return [e for e in events if e.get("event") == "tick"]


def host_app(settings: Settings) -> Any:
    """The host: a FastAPI app of its own, crontick mounted at /ops (as examples/fastapi_app.py does)."""
    from fastapi import FastAPI

    from crontick.app import create_app

    app = FastAPI()

    @app.get("/")
    def home() -> dict[str, str]:
        return {"app": "the host's own page"}

    app.mount(PREFIX, create_app(settings))
    return app


@pytest.fixture
def host_log() -> Iterator[HostLog]:
    handler = HostLog()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def test_crontick_moves_into_an_app_with_its_own_jobs_and_bookings(
    app_database: str, provider: Provider, host_log: HostLog
) -> None:
    before = _snapshot(app_database)
    applied = asyncio.run(db.migrate(app_database, source=("public", "appointments")))
    assert applied and applied == [v for v, _ in db.migration_files()]
    assert _snapshot(app_database) == before  # nothing of the app's changed
    with psycopg.connect(app_database) as conn:
        tables = {r[0] for r in conn.execute("select tablename from pg_tables where schemaname = 'crontick'")}
        assert {"jobs", "bookings", "reminder_sends", "crontick_migrations"} <= tables
        assert conn.execute("show search_path").fetchone() == ('"$user", public',)
        grace = str(conn.execute("select ref from public.bookings where guest = 'Grace Hopper'").fetchone()[0])  # type: ignore[index]

    _enqueue_every_way(app_database)
    settings = Settings(
        database_url=url_of(app_database),
        cron_secret=TEST_SECRET,
        admin_secret=ADMIN_SECRET,
        handler_modules=("tests.app.existing_app_handlers",),
        reminder_source=SOURCE,
        reminder_channel="webhook",
        reminder_webhook_url=provider.url + "/hooks/reminders",
        reminder_webhook_secret=WEBHOOK_SECRET,
    )
    cron = {"Authorization": f"Bearer {TEST_SECRET}"}
    with serve(host_app(settings)) as base, httpx.Client(base_url=base, timeout=30) as client:
        ticks = [client.post(f"{PREFIX}/api/cron/tick", headers=cron) for _ in range(2)]
        reminders = client.get(f"{PREFIX}/api/admin/reminders", headers={"Authorization": f"Bearer {ADMIN_SECRET}"})
        login = client.get(f"{PREFIX}/admin/login")
        home, outside = client.get("/"), client.post("/api/cron/tick", headers=cron)
    assert [t.status_code for t in ticks] == [200, 200], ticks[0].text
    first, second = (t.json() for t in ticks)
    assert first["jobs"]["succeeded"] == 5
    assert (first["reminders"]["sent"], second["reminders"]["sent"]) == (1, 0)
    with psycopg.connect(app_database) as conn:
        runs = sorted(r[0] for r in conn.execute("select via from public.job_runs"))
        statuses = conn.execute("select status, count(*) from crontick.jobs group by status").fetchall()
        sends = conn.execute("select booking_id, kind, status from crontick.reminder_sends").fetchall()
    assert runs == ["asyncpg", "psycopg2", "psycopg3", "sql", "sqlalchemy"]
    assert statuses == [("done", 5)]
    # The reminder: Grace's only (Carl cancelled, Lea in three days), once, named by the app's own uuid.
    assert sends == [(grace, "24h", "sent")]
    [sent] = provider.requests
    assert (
        sent.json["data"]["booking"]["id"] == grace and sent.json["data"]["booking"]["customer_name"] == "Grace Hopper"
    )
    assert sent.headers["webhook-id"] == f"reminder:{grace}:24h"
    # The admin answers under the prefix, naming the booking by the app's id; the host keeps everything else.
    assert reminders.status_code == 200, reminders.text
    assert [(r["booking_id"], r["customer_name"], r["status"]) for r in reminders.json()["reminders"]] == [
        (grace, "Grace Hopper", "sent")
    ]
    assert login.status_code == 200 and f'action="{PREFIX}/admin/login"' in login.text
    assert home.json() == {"app": "the host's own page"}
    assert outside.status_code == 404 and outside.json() == {"detail": "Not Found"}  # FastAPI's, not crontick's
    # The host's own handler on the root logger got each tick's line, one JSON object each.
    lines = host_log.ticks()
    assert [(t["jobs"]["succeeded"], t["reminders"]["sent"]) for t in lines] == [(5, 1), (0, 0)]
    assert _snapshot(app_database) == before


def test_migrate_twice_changes_nothing_and_a_public_install_is_not_left_behind(app_database: str) -> None:
    assert asyncio.run(db.migrate(app_database)) != []
    assert asyncio.run(db.migrate(app_database)) == []
    # An install from before 0.2 lives in public: migrating into the new default schema refuses to
    # start an empty one beside it, and says how to keep or move it.
    with psycopg.connect(app_database, autocommit=True) as conn:
        conn.execute("drop schema crontick cascade")
        conn.execute("create table public.crontick_migrations (version text primary key)")
    with pytest.raises(crontick.CrontickError, match="set CRONTICK_SCHEMA=public to keep using it"):
        asyncio.run(db.migrate(app_database))
