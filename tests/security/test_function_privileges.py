"""EXECUTE on crontick's functions (issue 33): PUBLIC has none, so under CRONTICK_SCHEMA=public on Supabase the claim and
record functions are no RPC endpoints for `anon`; a role granted EXECUTE on enqueue and signal alone (and USAGE on the
schema) enqueues and signals, and can neither claim, record nor read a job; a grant by name outlives a migrate."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from crontick import db
from tests.support.databases import fresh_database

# The internal functions a role that only enqueues and signals must not reach, called with valid arguments.
INTERNAL_CALLS = [
    "select * from {schema}.crontick_job_claim_due(now(), 10, interval '1 minute')",
    "select * from {schema}.crontick_job_record_outcomes(now(), '{{}}'::bigint[], '{{}}'::int[], '[]'::json, false,"
    " now(), 'x', '{{}}'::jsonb, '[]'::jsonb, null)",
    "select * from {schema}.crontick_job_types()",
]


@pytest.fixture
def make_role(admin_url: str) -> Iterator[Callable[[str], str]]:
    """make_role(database_url) -> a new role's name; each is dropped with what it was granted afterwards."""
    made: list[tuple[str, str]] = []

    def make(url: str) -> str:
        role = f"sp_role_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("create role {}").format(sql.Identifier(role)))
        made.append((url, role))
        return role

    yield make
    for url, role in made:
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(sql.SQL("drop owned by {}").format(sql.Identifier(role)))
        except psycopg.OperationalError:  # its database is dropped already, and what it granted there with it
            pass
    with psycopg.connect(admin_url, autocommit=True) as conn:
        for _, role in made:
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def _as(conn: psycopg.Connection[Any], role: str, statement: str) -> Any:
    """`statement`'s first row, run as `role` (`set local role`), in a transaction rolled back afterwards."""
    with conn.transaction(force_rollback=True):
        conn.execute(sql.SQL("set local role {}").format(sql.Identifier(role)))
        row = conn.execute(statement.encode()).fetchone()
    return row


def _refused(conn: psycopg.Connection[Any], role: str, statement: str) -> bool:
    try:
        _as(conn, role, statement)
    except psycopg.errors.InsufficientPrivilege:
        return True
    return False


def _grant_enqueue_and_signal(conn: psycopg.Connection[Any], schema: str, role: str, enqueue: str, signal: str) -> None:
    names = {"schema": sql.Identifier(schema), "role": sql.Identifier(role)}
    conn.execute(sql.SQL("grant usage on schema {schema} to {role}").format(**names))
    grant = "grant execute on function {schema}.{enqueue}, {schema}.{signal} to {role}"
    conn.execute(sql.SQL(grant).format(enqueue=sql.Identifier(enqueue), signal=sql.Identifier(signal), **names))


def test_a_role_granted_enqueue_and_signal_does_that_and_nothing_else(
    database_url: str, make_role: Callable[[str], str]
) -> None:
    worker, stranger = make_role(database_url), make_role(database_url)
    with psycopg.connect(database_url, autocommit=True) as conn:
        _grant_enqueue_and_signal(conn, "crontick", worker, "enqueue", "signal")
        conn.execute(sql.SQL("grant usage on schema crontick to {}").format(sql.Identifier(stranger)))
        first = _as(conn, worker, "select crontick.enqueue('send_email', '{\"to\": 1}', key => 'welcome:1')")[0]
        # committed, so that the same key finds it: the function's own select, which the role could not run itself
        conn.execute("select crontick.enqueue('send_email', '{}', key => 'welcome:2')")
        again = _as(conn, worker, "select crontick.enqueue('send_email', '{}', key => 'welcome:2')")[0]
        kept = _as(conn, worker, "select crontick.signal('survey:1', '{\"answer\": \"yes\"}')")
        assert isinstance(first, int) and isinstance(again, int) and kept == (None,)
        assert conn.execute("select id from crontick.jobs where key = 'welcome:2'").fetchone() == (again,)
        assert _refused(conn, worker, "select id from crontick.jobs limit 1")
        assert _refused(conn, worker, "select * from crontick.crontick_signals limit 1")
        for call in INTERNAL_CALLS:
            assert _refused(conn, worker, call.format(schema="crontick")), call
        # A role with no grant of its own (PUBLIC's are gone) reaches neither the SQL API nor the rest.
        assert _refused(conn, stranger, "select crontick.enqueue('send_email', '{}')")
        assert _refused(conn, stranger, "select crontick.signal('survey:1', null)")
        # The grant by name outlives the next migrate, which re-creates every function.
        asyncio.run(db.migrate(database_url))
        assert isinstance(_as(conn, worker, "select crontick.enqueue('send_email', '{}')")[0], int)


def test_in_public_on_a_supabase_like_database_anon_calls_none_of_crontick_s_functions(
    admin_url: str, make_role: Callable[[str], str]
) -> None:
    """Supabase's default privileges grant every function created in `public` to `anon` and `authenticated`."""
    with fresh_database(admin_url, "template0") as url:
        anon, worker = make_role(url), make_role(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("alter default privileges in schema public grant all on functions to {}").format(
                    sql.Identifier(anon)
                )
            )
            conn.execute(sql.SQL("grant usage on schema public to {}").format(sql.Identifier(anon)))
            asyncio.run(db.migrate(url, "public"))
            _grant_enqueue_and_signal(conn, "public", worker, "crontick_enqueue", "crontick_signal")
            for call in [
                *INTERNAL_CALLS,
                "select public.crontick_enqueue('send_email', '{{}}')",
                "select public.crontick_signal('k', null)",
            ]:
                assert _refused(conn, anon, call.format(schema="public")), call
            assert isinstance(_as(conn, worker, "select public.crontick_enqueue('send_email', '{}')")[0], int)
            asyncio.run(db.migrate(url, "public"))
            assert _refused(conn, anon, "select public.crontick_enqueue('send_email', '{}')")
            assert _as(conn, worker, "select public.crontick_signal('k', null)") == (None,)


OLD_ENQUEUE_ARGUMENTS = (
    "type text, payload jsonb default '{}', run_after timestamptz default null, max_attempts integer default null, "
    "key text default null, group_key text default null, priority integer default null, debounce_key text default "
    "null, debounce_seconds double precision default null, debounce_max_seconds double precision default null"
)


def test_a_grant_on_enqueue_outlives_the_migration_that_adds_its_traceparent_argument(
    database_url: str, make_role: Callable[[str], str]
) -> None:
    """0045 drops crontick.enqueue's 10-argument signature for the 12-argument one (0041's start_by, then
    traceparent): the role granted the old one by name (docs/security.md) may call the new one."""
    worker = make_role(database_url)
    with psycopg.connect(database_url, autocommit=True) as conn:
        # The database as 0044 left it: the 10-argument enqueue only, granted to the worker by name.
        conn.execute("delete from crontick.crontick_migrations where version = '0045_enqueue_traceparent'")
        conn.execute("drop function crontick.enqueue(text, jsonb, timestamptz, integer, text, text, integer, text, "
                     "double precision, double precision, timestamptz, text)")  # fmt: skip
        conn.execute(
            f"create function crontick.enqueue({OLD_ENQUEUE_ARGUMENTS}) returns bigint language sql as 'select 0::bigint'"
        )
        conn.execute("revoke execute on function crontick.enqueue from public")
        _grant_enqueue_and_signal(conn, "crontick", worker, "enqueue", "signal")
        assert asyncio.run(db.migrate(database_url)) == ["0045_enqueue_traceparent"]
        signatures = conn.execute("select count(*) from pg_proc where proname = 'enqueue'").fetchone()
        job_id = _as(conn, worker, "select crontick.enqueue('send_email', '{}', traceparent => null)")[0]
        assert signatures == (1,) and isinstance(job_id, int) and job_id > 0


OLD_RECORD_ARGUMENTS = "timestamptz, bigint[], int[], json, boolean, timestamptz, text, jsonb, jsonb, timestamptz"


def test_a_grant_on_the_record_functions_outlives_the_migration_that_adds_their_run_times(
    database_url: str, make_role: Callable[[str], str]
) -> None:
    """0047 drops crontick_job_record_outcomes's and crontick_job_record_and_claim's signatures for ones with the
    run times last: a role granted the old ones by name (a tick run under a role of its own) may call the new ones."""
    ticker = make_role(database_url)
    old = {
        "crontick_job_record_outcomes": OLD_RECORD_ARGUMENTS,
        "crontick_job_record_and_claim": f"{OLD_RECORD_ARGUMENTS}, int, interval, jsonb",
    }
    with psycopg.connect(database_url, autocommit=True) as conn:
        # The database as 0045 left it: the old signatures only, granted to the ticker by name.
        conn.execute("delete from crontick.crontick_migrations where version = '0047_record_run_times'")
        for name, arguments in old.items():
            conn.execute(f"drop function crontick.{name}({arguments}, double precision[])")
            conn.execute(f"create function crontick.{name}({arguments}) returns void language sql as ''")
            conn.execute(f"revoke execute on function crontick.{name} from public")
            conn.execute(
                sql.SQL("grant execute on function crontick.{}(" + arguments + ") to {}").format(
                    sql.Identifier(name), sql.Identifier(ticker)
                )
            )
        assert asyncio.run(db.migrate(database_url)) == ["0047_record_run_times"]
        for name, arguments in old.items():
            assert conn.execute("select count(*) from pg_proc where proname = %s", (name,)).fetchone() == (1,)
            allowed = conn.execute(
                "select has_function_privilege(%s, %s::regprocedure, 'execute')",
                (ticker, f"crontick.{name}({arguments}, double precision[])"),
            ).fetchone()
            assert allowed == (True,), name
