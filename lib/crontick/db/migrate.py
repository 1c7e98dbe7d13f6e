"""`crontick migrate`: apply each numbered migration once, then every SQL function's live definition, in one transaction."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any, NamedTuple

import psycopg
from psycopg.rows import dict_row

from crontick.db import schema as schemas
from crontick.db import source as reminder_source
from crontick.db.connection import connect
from crontick.db.queries import current_schema, sql_dir
from crontick.errors import CrontickError, DatabaseUnavailable, ReminderSourceError
from crontick.settings.source import source_parts

# Transaction-scoped, so it is safe behind a transaction-mode pooler.
MIGRATION_LOCK_KEY = 0x63726F6E7469636B  # "crontick"

# A migrate resolves unqualified built-ins (a column's `default now()`, a check, an index expression,
# the DO blocks) in pg_catalog only, as crontick's functions do (sql/function_rules.sql): what a role
# planted in `public` is not what the tables it creates call. `set local` ends with the transaction.
PINNED_SEARCH_PATH = "set local search_path = pg_catalog, pg_temp"

# Tables and functions are kept apart. sql/migrations/NNNN_*.sql change tables (and what hangs on
# them: indexes, constraints, triggers) and run once each. sql/functions/<name>.sql holds the live
# definition of the function crontick_<name> as `create or replace function`, and every migrate
# applies all of them (in name order) after the pending migrations, in the same transaction under
# the same lock: a changed body ships by editing its file, and a fresh install and an upgrade from
# any version end with the same functions (tests/db/test_migrate_functions.py).
#
# Functions come after the migrations because a function may read what a migration adds (a column,
# a type). DDL that needs a function to exist already (a trigger executing it, a default calling it)
# names it in its migration with a line `-- requires: sql/functions/<name>.sql`; that file is
# applied just before the migration, and again at the end. A migration never calls a crontick
# function to move data: on a fresh install it would not exist yet, on an upgrade it would be the
# previous body.
#
# `create or replace` keeps a function's argument types and result type. A change of either needs
# a migration that drops the old signature (`drop function if exists crontick_x(<old types>)`); the
# file then creates the new one. Forgetting it leaves an old overload behind, or fails the migrate
# on upgrade, and the upgrade test fails both ways.
_REQUIRES = re.compile(r"^--\s*requires:\s*sql/functions/(\w+)\.sql\s*$", re.MULTILINE)


def migration_files() -> list[tuple[str, str]]:
    """(version, sql) for each sql/migrations/NNNN_name.sql, in order."""
    return _sql_files("migrations")


def function_files() -> list[tuple[str, str]]:
    """(name, sql) for each sql/functions/<name>.sql, in name order; it defines crontick_<name>."""
    return _sql_files("functions")


def function_rules() -> str:
    """sql/function_rules.sql: the pinned search_path and the revoked EXECUTE every function of crontick's gets."""
    return sql_dir().joinpath("function_rules.sql").read_text(encoding="utf-8")


def required_functions(migration_sql: str) -> list[str]:
    """The function files a migration names in `-- requires: sql/functions/<name>.sql` lines."""
    return _REQUIRES.findall(migration_sql)


def _sql_files(folder_name: str) -> list[tuple[str, str]]:
    folder = sql_dir().joinpath(folder_name)
    files = sorted((f.name, f) for f in folder.iterdir() if f.name.endswith(".sql"))
    return [(name.removesuffix(".sql"), f.read_text(encoding="utf-8")) for name, f in files]


class Step(NamedTuple):
    """One statement of a migrate: a function file, a migration (then recorded as `version`), in order."""

    sql: str
    version: str | None = None  # set on a migration's own statement


def plan(schema: str, done: set[str], source: schemas.Source | None = None) -> list[Step]:
    """The statements that bring `schema` from the migrations in `done` to today: pure, no database.

    Each pending migration, preceded by the function files it names in `requires` lines; then
    every function file, whatever was pending; then sql/function_rules.sql over all of them. The functions read the reminder source `source`
    (default crontick's own bookings): the probe is built for it (sql/functions/tick_probe.sql).
    """
    functions = {name: schemas.compose_script(text, schema, source) for name, text in function_files()}
    steps: list[Step] = []
    for version, sql_text in migration_files():
        if version in done:
            continue
        for name in required_functions(sql_text):
            if name not in functions:
                raise CrontickError(f"expected sql/functions/{name}.sql (required by {version}), got no such file")
            steps.append(Step(functions[name]))
        steps.append(Step(schemas.compose_script(sql_text, schema), version))
    steps.extend(Step(text) for text in functions.values())
    steps.append(Step(schemas.compose_script(function_rules(), schema)))
    return steps


def _preamble(schema: str) -> list[str]:
    return [
        schemas.compose("create schema if not exists {schema}", schema),
        schemas.compose(
            "create table if not exists {schema}.crontick_migrations ("
            " version text primary key, applied_at timestamptz not null default now())",
            schema,
        ),
    ]


def script(schema: str, after: str | None = None, source: schemas.Source | None = None) -> str:
    """`crontick migrate --sql`: the SQL of a migrate from `after` (a version; None: from nothing), for
    teams that apply migrations with their own tool (Alembic, Django, the Supabase CLI). One
    transaction, recording each migration as `crontick migrate` does, so either can take over later."""
    versions = [version for version, _ in migration_files()]
    if after is not None and after not in versions:
        raise CrontickError(f"migrate --after: expected one of {', '.join(versions)}, got: {after!r}")
    done = set(versions[: versions.index(after) + 1]) if after is not None else set()
    out = ["begin;", PINNED_SEARCH_PATH + ";", f"select pg_advisory_xact_lock({MIGRATION_LOCK_KEY});"]
    out.extend(s + ";" for s in _preamble(schema))
    for step in plan(schema, done, source):
        out.append(step.sql.strip().rstrip(";") + ";")
        if step.version is not None:
            record = "insert into {schema}.crontick_migrations (version) values ({version});"
            out.append(schemas.compose_values(record, schema, version=step.version))
    out.append("commit;")
    return "\n\n".join(out) + "\n"


class Migrated(NamedTuple):
    """What a migrate did: the versions it applied, and the reminder source its functions read (a label)."""

    applied: list[str]
    source: str
    source_was: str | None = None  # the source they read before, when this run switched it
    source_kept: bool = False  # no source was asked for, and the installed one (not crontick's own) stayed
    source_problem: ReminderSourceError | None = None  # with source_must_read=False: what is wrong with it


async def migrate(url: str, schema: str | None = None, source: schemas.Source | None = None) -> list[str]:
    """`apply`, returning only the versions it applied."""
    return (await apply(url, schema, source)).applied


async def apply(
    url: str,
    schema: str | None = None,
    source: schemas.Source | None = None,
    *,
    source_must_read: bool = True,
    variables: Collection[str] = (),
) -> Migrated:
    """Apply each migration not yet recorded, then every function file, in one transaction under an advisory lock.

    Everything goes into `schema` (default: the process's, CRONTICK_SCHEMA), which is created if
    missing; nothing outside it is touched. Two processes migrating at once serialise on the
    lock; the second sees the first's records and applies no migration (it applies the functions
    again, which changes nothing).
    `source` is the reminder source (CRONTICK_REMINDER_SOURCE): the functions are built for it. None
    (the variable is not set) keeps the source the install reads already, crontick's own bookings on
    a fresh one: a deploy step without the app's environment never points reminders back at
    crontick's table; that takes naming it (`crontick migrate --reminder-source`). The source is
    checked last, so one that lacks a column or cannot be read fails the migrate with one line
    naming it and the column (ReminderSourceError), as does a template's variable (`variables`: those
    beyond crontick's own) that is not a column of it; with `source_must_read=False` (Django's
    migrate, which may run before the migration that creates the view) it is returned instead.
    """
    schema = schemas.checked(schema) if schema else current_schema()
    conn = await connect(url)
    try:
        async with conn.transaction():
            await conn.execute(PINNED_SEARCH_PATH)
            await conn.execute("select pg_advisory_xact_lock(%(key)s)", {"key": MIGRATION_LOCK_KEY})
            await _refuse_a_moved_install(conn, schema)
            installed = await reminder_source.installed(conn, schema)
            chosen = source or (source_parts(installed) if installed else schemas.default_source(schema))
            for statement in _preamble(schema):
                await conn.execute(statement.encode())
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(schemas.compose("select version from {schema}.crontick_migrations", schema).encode())
            done = {row["version"] for row in await cur.fetchall()}
            record = schemas.compose("insert into {schema}.crontick_migrations (version) values (%(v)s)", schema)
            applied = []
            for step in plan(schema, done, chosen):
                await conn.execute(step.sql.encode())
                if step.version is not None:
                    await conn.execute(record.encode(), {"v": step.version})
                    applied.append(step.version)
            problem = await reminder_source.problem(conn, chosen, variables)
            if problem is not None and source_must_read:
                raise problem
            if problem is None:
                await reminder_source.warn_if_exposed(conn, chosen)
        label = schemas.source_label(chosen)
        kept = source is None and installed is not None and chosen != schemas.default_source(schema)
        was = installed if installed is not None and installed != label else None
        return Migrated(applied, label, was, kept, problem)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(exc) from exc
    except psycopg.Error as exc:
        raise CrontickError(f"migration failed: {type(exc).__name__}: {exc}") from exc
    finally:
        await conn.close()


async def _refuse_a_moved_install(conn: psycopg.AsyncConnection[Any], schema: str) -> None:
    """Refuse to start an empty `schema` beside an install from before 0.2, whose tables are in `public`.

    Its jobs and bookings would be left behind unseen; the user chooses: keep `public`, or move it.
    """
    if schema == "public":
        return
    cur = await conn.execute(
        "select to_regclass('public.crontick_migrations') is not null,"
        " to_regclass(quote_ident(%(schema)s) || '.crontick_migrations') is not null",
        {"schema": schema},
    )
    row = await cur.fetchone()
    if row is not None and row[0] and not row[1]:
        raise CrontickError(
            f"migrate: expected crontick's tables in schema {schema!r}, got an install in schema 'public' "
            f"(from before 0.2): set CRONTICK_SCHEMA=public to keep using it, or move it into {schema!r} "
            "as the Upgrading page shows, then migrate again"
        )
