"""A reminder source view and Supabase's `anon` key: the view docs/reminders.md shows reads nothing for a role the
table's row-level security shuts out, and `crontick migrate` warns about a view that reads with its owner's rights
for such a role.

`anon` is made as Supabase makes it: a NOLOGIN role with USAGE on `public` and, through the default privileges
of the role that creates the tables, SELECT on every table and view made there; the table has row-level
security and no policy for it. Roles belong to the whole server, so each test's `anon` carries a suffix.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from tests.support.constants import ROOT
from tests.support.run_cli import cli_env, crontick

SOURCE = "public.appointments_for_crontick"
VIEW_NAME = sql.Identifier("public", "appointments_for_crontick")
# The view as docs/reminders.md showed it before it said security_invoker.
OWNER_RIGHTS_VIEW = """
create view public.appointments_for_crontick as
select uid as id, client as customer_name, mail as email, mobile as phone, begins as starts_at, tz as time_zone,
       case state when 'booked' then 'confirmed' else 'cancelled' end as status, lang as language
from public.appointments
"""
BOOKING = (
    "insert into public.appointments (client, mail, mobile, begins, tz)"
    " values ('Ada Secret', 'ada@example.com', '+31612345678', now() + interval '3 hours', 'Europe/Amsterdam')"
)


def documented_sql() -> str:
    """The SQL block of docs/reminders.md that creates the example table and its view."""
    text = (ROOT / "docs" / "reminders.md").read_text()
    blocks = re.findall(r"```sql\n(.*?)```", text, re.DOTALL)
    (block,) = [b for b in blocks if f"create view {SOURCE}" in b]
    return block


@pytest.fixture
def anon(conn: psycopg.Connection[Any]) -> Iterator[str]:
    """A role made like Supabase's `anon`, with `crontick_app` (the docs' runtime role: bypassrls, as the docs
    say it needs when the table has row-level security) beside it."""
    name = f"anon_{uuid.uuid4().hex[:8]}"
    app = f"{name}_crontick_app"
    conn.execute(sql.SQL("create role {} nologin").format(sql.Identifier(name)))
    conn.execute(sql.SQL("create role {} nologin bypassrls").format(sql.Identifier(app)))
    conn.execute(sql.SQL("grant usage on schema public to {}").format(sql.Identifier(name)))
    # Supabase's default privileges: whatever the creating role makes in public, anon may select.
    conn.execute(
        sql.SQL("alter default privileges in schema public grant select on tables to {}").format(sql.Identifier(name))
    )
    try:
        yield name
    finally:
        for role in (name, app):
            conn.execute(sql.SQL("drop owned by {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def make_source(conn: psycopg.Connection[Any], anon: str, view: str | None = None) -> None:
    """The documented table and view (or the table and `view`), row-level security on, and one booking."""
    made = documented_sql().replace("crontick_app", sql.Identifier(f"{anon}_crontick_app").as_string(conn))
    if view is not None:
        made = made.replace(
            made[made.index("-- security_invoker") : made.index("-- What the tick reads")], view + ";\n"
        )
    conn.execute(made)
    conn.execute("alter table public.appointments enable row level security")  # and no policy for anon
    conn.execute(BOOKING)


def read_as(conn: psycopg.Connection[Any], role: str, columns: str, table: sql.Composable = VIEW_NAME) -> list[Any]:
    """`columns` of `table` as `role` reads them."""
    with conn.transaction():
        conn.execute(sql.SQL("set local role {}").format(sql.Identifier(role)))
        return conn.execute(sql.SQL("select {} from {}").format(sql.SQL(columns), table)).fetchall()


def migrate(database_url: str) -> tuple[int, list[str], list[dict[str, Any]]]:
    """`crontick migrate` with the view as the source: its exit code, stderr's plain lines and its JSON events."""
    done = crontick("migrate", env=cli_env(database_url, CRONTICK_REMINDER_SOURCE=SOURCE))
    lines = done.stderr.splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    return done.returncode, [line for line in lines if not line.startswith("{")], events


def test_anon_reads_nothing_through_the_documented_view_and_migrate_says_nothing(
    conn: psycopg.Connection[Any], database_url: str, anon: str
) -> None:
    make_source(conn, anon)
    assert read_as(conn, anon, "count(*)", sql.Identifier("public", "appointments")) == [(0,)]  # row-level security
    assert read_as(conn, anon, "customer_name, email, phone") == []
    reminded = read_as(conn, f"{anon}_crontick_app", "customer_name")
    assert reminded == [("Ada Secret",)]  # crontick's role, granted as the docs say, still reads it
    code, plain, events = migrate(database_url)
    assert (code, plain, events) == (0, [], []), (plain, events)


def test_migrate_warns_when_anon_reads_the_table_through_a_view_with_its_owner_s_rights(
    conn: psycopg.Connection[Any], database_url: str, anon: str
) -> None:
    make_source(conn, anon, OWNER_RIGHTS_VIEW)
    leaked = read_as(conn, anon, "customer_name, email, phone")
    assert leaked == [("Ada Secret", "ada@example.com", "+31612345678")]  # what the warning is about
    code, plain, events = migrate(database_url)
    assert code == 0, plain
    assert plain == [
        f"crontick: warning: CRONTICK_REMINDER_SOURCE {SOURCE}: expected a view only crontick's role reads, or one "
        "created with (security_invoker = true), got: a view that reads with its owner's rights for "
        f"{anon} (cannot read public.appointments)"
    ]
    (event,) = events
    assert event["event"] == "reminder_source_exposed" and event["roles"] == [anon]
    assert event["detail"] == plain[0].removeprefix("crontick: warning: ")


def test_migrate_warns_about_a_role_granted_the_view_but_not_the_table(
    conn: psycopg.Connection[Any], database_url: str, anon: str
) -> None:
    reader = f"{anon}_crontick_app"
    conn.execute("create table public.appointments_plain (like crontick.bookings)")  # no row-level security at all
    conn.execute(sql.SQL("create view {} as select * from public.appointments_plain").format(VIEW_NAME))
    conn.execute(sql.SQL("grant select on {} to {}").format(VIEW_NAME, sql.Identifier(reader)))
    code, plain, events = migrate(database_url)
    assert code == 0 and [e["roles"] for e in events] == [[reader]], (plain, events)
    assert plain[0].endswith(f"for {reader} (cannot read public.appointments_plain)")

    conn.execute(sql.SQL("alter view {} set (security_invoker = on)").format(VIEW_NAME))
    assert migrate(database_url) == (0, [], [])
