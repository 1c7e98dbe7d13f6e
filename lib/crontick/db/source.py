"""The reminder source's shape (CRONTICK_REMINDER_SOURCE): checked by `crontick migrate`, and asked only
when a tick's statement that reads the source has failed, to say in one line what is wrong.

The hot path never pays for it: the tick reads the source in its probe and its reminder claim, and
only when one of them fails does `explain` look at the catalogue (a few statements, once).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Collection
from typing import Any

import psycopg
from psycopg import sql

from crontick import logs
from crontick.db.schema import Source, source_label
from crontick.errors import ReminderSourceError

# What crontick reads from the source (CONTRACT.md "Reminders from your own table"); `language` is optional.
COLUMNS = ("id", "customer_name", "email", "phone", "starts_at", "time_zone", "status")
OPTIONAL = ("language",)
TIMESTAMPTZ = "timestamp with time zone"
# The errors of a statement that reads a source which lacks a column or cannot be read.
SHAPE_ERRORS = (
    psycopg.errors.UndefinedColumn,
    psycopg.errors.UndefinedTable,
    psycopg.errors.InvalidSchemaName,
    psycopg.errors.InsufficientPrivilege,
    psycopg.errors.UndefinedFunction,  # an operator the source's column types lack (status = 'confirmed')
    psycopg.errors.DatatypeMismatch,
    psycopg.errors.InvalidTextRepresentation,  # status an enum without 'confirmed'
)
# Raised by the probe (sql/functions/tick_probe.sql) when this process's source is not the one migrate built it for.
OTHER_SOURCE_STATE = "CTRS0"

_CATALOGUE = """
select c.oid is not null, coalesce(pg_catalog.has_schema_privilege(n.oid, 'USAGE'), false),
    a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), pg_catalog.has_column_privilege(c.oid, a.attnum, 'SELECT')
from (select pg_catalog.to_regnamespace(%(schema)s) as oid) s
left join pg_catalog.pg_namespace n on n.oid = s.oid
left join pg_catalog.pg_class c on c.relnamespace = n.oid and c.relname = %(name)s and c.relkind in ('r', 'v', 'm', 'p', 'f')
left join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
"""


# Roles that may read the source but not a relation under it, when the source is a view that reads with its
# owner's rights (not security_invoker) or a materialized view: through it they read what the owner reads.
# A role subject to row-level security on a table reads the table's rows by the owner's policies through such
# a view, its own never applied. Superusers, predefined roles, the view's owner and the role migrating are
# left out: the owner reads for them by design.
_EXPOSED = """
with v as (
    select c.oid, c.relowner from pg_catalog.pg_class c
    where c.oid operator(pg_catalog.=) pg_catalog.to_regclass(%(source)s)
      and (c.relkind operator(pg_catalog.=) 'v' or c.relkind operator(pg_catalog.=) 'm')
      and not exists (
          select from pg_catalog.unnest(c.reloptions) o
          where o operator(pg_catalog.~*) '^security_invoker=(t|tr|tru|true|y|ye|yes|on|1)$')
), under as (
    select distinct d.refobjid as oid
    from v
    join pg_catalog.pg_rewrite w on w.ev_class operator(pg_catalog.=) v.oid
    join pg_catalog.pg_depend d on d.objid operator(pg_catalog.=) w.oid
      and d.classid operator(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
      and d.refclassid operator(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
      and d.refobjid operator(pg_catalog.<>) v.oid
)
select r.rolname::text, pg_catalog.min(pg_catalog.format('%%I.%%I', n.nspname, t.relname))
from v cross join pg_catalog.pg_roles r
join under u on true
join pg_catalog.pg_class t on t.oid operator(pg_catalog.=) u.oid
join pg_catalog.pg_namespace n on n.oid operator(pg_catalog.=) t.relnamespace
where not r.rolsuper and r.rolname::text operator(pg_catalog.!~) '^pg_'
  and r.oid operator(pg_catalog.<>) v.relowner and r.rolname operator(pg_catalog.<>) current_user
  and pg_catalog.has_table_privilege(r.oid, v.oid, 'SELECT')
  and (not pg_catalog.has_table_privilege(r.oid, t.oid, 'SELECT')
       or (t.relrowsecurity and not r.rolbypassrls
           and (t.relforcerowsecurity or not pg_catalog.pg_has_role(r.oid, t.relowner, 'USAGE'))))
group by r.rolname order by r.rolname
"""
EXPOSED_ROLES_SHOWN = 5


def _error(source: Source, expected: str, got: str) -> ReminderSourceError:
    return ReminderSourceError(f"CRONTICK_REMINDER_SOURCE {source_label(source)}: expected {expected}, got: {got}")


async def problem(
    conn: psycopg.AsyncConnection[Any], source: Source, variables: Collection[str] = ()
) -> ReminderSourceError | None:
    """What is wrong with `source` for this connection's role, or None: the first missing or unreadable
    column, a starts_at that is not timestamptz, a table that is not there or cannot be read, or one of
    `variables` (those the reminder templates use beyond crontick's own) that is not one of its columns."""
    schema, name = source
    cur = await conn.execute(_CATALOGUE, {"schema": regnamespace_arg(schema), "name": name})
    rows = await cur.fetchall()
    found, usage = rows[0][0], rows[0][1]
    if not found:
        return _error(source, "a table or view crontick can read", "no such table or view")
    if not usage:
        return _error(source, "USAGE on its schema for this role", f"permission denied for schema {schema}")
    columns = {r[2]: (r[3], r[4]) for r in rows if r[2] is not None}
    for column in COLUMNS:
        if column not in columns:
            return _error(source, f"a column {column}", f"no such column (it has {', '.join(columns) or 'none'})")
    for column in (*COLUMNS, *OPTIONAL):
        if column in columns and not columns[column][1]:
            return _error(source, f"SELECT on column {column} for this role", f"permission denied for {column}")
    if columns["starts_at"][0] != TIMESTAMPTZ:
        return _error(source, "starts_at of type timestamptz", columns["starts_at"][0])
    unknown = sorted(set(variables) - set(columns))
    if unknown:
        return _error(
            source,
            "a column for each variable of the reminder templates that is not crontick's own",
            f"{{{unknown[0]}}}, which is neither (the source's columns: {', '.join(columns)})",
        )
    # The catalogue looks right: read it as the claim does (a view's own tables, row-level security, types).
    probe = sql.SQL(
        "select b.id::text, b.customer_name, b.email, b.phone, b.starts_at, b.time_zone, b.status"
        " from {} b where b.status = 'confirmed' limit 0"
    ).format(sql.Identifier(*source))
    try:
        async with conn.transaction():  # a savepoint inside migrate's transaction
            await conn.execute(probe)
    except psycopg.errors.OperationalError:
        raise
    except psycopg.Error as exc:
        first = (exc.diag.message_primary or str(exc)).splitlines()[0]
        return _error(source, "a table or view crontick can read", f"{type(exc).__name__}: {first}")
    return None


async def warn_if_exposed(conn: psycopg.AsyncConnection[Any], source: Source) -> None:
    """Warn (a line on stderr and a `reminder_source_exposed` event) when `source` is a view other roles read with
    its owner's rights: Supabase's `anon` key, say, reading names and phones that row-level security hides."""
    cur = await conn.execute(_EXPOSED, {"source": sql.Identifier(*source).as_string(None)})
    rows = await cur.fetchall()
    if not rows:
        return
    shown = ", ".join(f"{role} (cannot read {table})" for role, table in rows[:EXPOSED_ROLES_SHOWN])
    more = f" and {len(rows) - EXPOSED_ROLES_SHOWN} more" if len(rows) > EXPOSED_ROLES_SHOWN else ""
    detail = (
        f"CRONTICK_REMINDER_SOURCE {source_label(source)}: expected a view only crontick's role reads, or one "
        f"created with (security_invoker = true), got: a view that reads with its owner's rights for {shown}{more}"
    )
    print(f"crontick: warning: {detail}", file=sys.stderr)
    logs.warning("reminder_source_exposed", source=source_label(source), roles=[r[0] for r in rows], detail=detail)


def regnamespace_arg(schema: str) -> str:
    """to_regnamespace's argument: the name as an identifier (quoted), so case and dots survive."""
    return sql.Identifier(schema).as_string(None)


# The source an install's probe reads, as crontick migrate composed it into the probe's check
# (sql/functions/tick_probe.sql: `_reminder_source is distinct from '<label>'`).
_PROBE_SOURCE = re.compile(r"_reminder_source is distinct from '((?:[^']|'')*)'")


async def installed(conn: psycopg.AsyncConnection[Any], schema: str) -> str | None:
    """The label of the reminder source `schema`'s functions were last built for; None on a fresh install."""
    cur = await conn.execute(
        "select p.prosrc from pg_catalog.pg_proc p"
        " where p.pronamespace = pg_catalog.to_regnamespace(%(schema)s) and p.proname = 'crontick_tick_probe'",
        {"schema": regnamespace_arg(schema)},
    )
    for (body,) in await cur.fetchall():
        found = _PROBE_SOURCE.search(body)
        if found:
            return found.group(1).replace("''", "'")
    return None


async def mismatch(
    conn: psycopg.AsyncConnection[Any], source: Source, schema: str, variables: Collection[str] = ()
) -> ReminderSourceError | None:
    """What stops reminders for a process configured with `source`, or None: not the source `crontick migrate`
    last built `schema`'s functions for, or what `problem` finds (`manage.py check`). None before any migrate."""
    was = await installed(conn, schema)
    if was is None:
        return None
    if was != source_label(source):
        return ReminderSourceError(
            f"CRONTICK_REMINDER_SOURCE: expected {was}, the source crontick migrate last ran with, got: "
            f"{source_label(source)} (run crontick migrate with this setting)"
        )
    return await problem(conn, source, variables)


async def check(conn: psycopg.AsyncConnection[Any], source: Source) -> None:
    """ReminderSourceError naming the source and the column when `problem` finds one (crontick migrate)."""
    found = await problem(conn, source)
    if found is not None:
        raise found


async def explain(conn: psycopg.AsyncConnection[Any], source: Source, schema: str, exc: psycopg.Error) -> None:
    """After a tick's statement that reads the source failed with `exc`: ReminderSourceError when the
    source is to blame (the probe's refusal of another source, or what `problem` finds), else nothing
    (the caller handles `exc` as before: an unmigrated `schema`, crontick's own, is not the source's fault)."""
    if exc.sqlstate == OTHER_SOURCE_STATE:
        raise ReminderSourceError(exc.diag.message_primary or str(exc)) from exc
    if not isinstance(exc, SHAPE_ERRORS):
        return
    try:
        migrated = await conn.execute(
            "select pg_catalog.to_regclass(%s) is not null",
            [sql.Identifier(schema, "crontick_migrations").as_string(None)],
        )
        if not (await migrated.fetchone() or (False,))[0]:
            return
        found = await problem(conn, source)
    except psycopg.errors.OperationalError:
        raise
    except psycopg.Error:
        return
    if found is not None:
        raise found from exc
