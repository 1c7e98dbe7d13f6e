"""sql/schema.sql, crontick's live schema in one readable file: written from a fresh migrate, checked against one.

`python -m crontick.db.schema_file --write` (`make schema`) migrates a new, empty database and writes
what it holds: each table with its columns (type, default, not-null, identity, generated),
constraints and row-level security, then its indexes and triggers; then any view or free-standing
sequence. `--check` compares instead, and exits 1 with a unified diff when the file is stale
(tests/db/test_schema_file.py does the same against the test template).

It is read from the catalog (`format_type`, `pg_get_expr`, `pg_get_constraintdef`, `pg_get_indexdef`,
`pg_get_triggerdef`) rather than by pg_dump, whose output follows the client's version: the same
migrations give the same file on PostgreSQL 15 and 18. The migrations stay the source of truth; this
file is where a newcomer reads what they add up to. Functions are not in it: each lives in its own
file in sql/functions/.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from crontick.db import embedded
from crontick.db.migrate import migrate
from crontick.db.queries import sql_dir

SCHEMA = "crontick"  # the file shows the default CRONTICK_SCHEMA; another schema holds the same tables

# Tables in reading order: the queue first, then what hangs on a job, then flow control, schedules,
# hooks, reminders, the tick's own records and the admin. A table not named here follows, by name.
TABLE_ORDER = (
    "jobs",
    "job_attempts",
    "job_steps",
    "crontick_signals",
    "crontick_pauses",
    "crontick_rate_limits",
    "crontick_type_minutes",
    "crontick_step_minutes",
    "crontick_schedules",
    "crontick_schedule_slots",
    "crontick_schedule_declared",
    "crontick_inbound_events",
    "bookings",
    "reminder_sends",
    "crontick_alerts",
    "crontick_ticks",
    "crontick_token_uses",
    "admin_audit",
    "crontick_admin_signouts",
    "crontick_migrations",
)

HEADER = """\
-- crontick's live schema: every table with its columns, constraints, indexes and triggers, as a fresh
-- `crontick migrate` leaves them (shown in schema crontick, the default CRONTICK_SCHEMA).
--
-- GENERATED, DO NOT EDIT. Regenerate with `make schema` (python -m crontick.db.schema_file --write);
-- tests/db/test_schema_file.py fails when this file and a fresh migrate differ. Change the schema
-- with a new migration in sql/migrations/, then regenerate. The SQL functions (the claim, the record,
-- crontick.enqueue, the triggers' functions) are in sql/functions/, one per file.
"""

# Every query runs with search_path = pg_catalog only, so each name of crontick's comes out qualified
# and built-ins bare, whatever the server's or the role's search_path.
_TABLES = """
select c.oid, c.relname, c.oid::pg_catalog.regclass::text as name, c.relrowsecurity, c.relforcerowsecurity
from pg_catalog.pg_class c
where c.relnamespace = %(schema)s::regnamespace and c.relkind in ('r', 'p')
"""

_COLUMNS = """
select pg_catalog.quote_ident(a.attname) as attname, pg_catalog.format_type(a.atttypid, a.atttypmod) as type, a.attnotnull, a.attidentity,
    a.attgenerated, pg_catalog.pg_get_expr(d.adbin, d.adrelid) as expr,
    case when a.attcollation <> t.typcollation then pg_catalog.quote_ident(co.collname) end as collation
from pg_catalog.pg_attribute a
join pg_catalog.pg_type t on t.oid = a.atttypid
left join pg_catalog.pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
left join pg_catalog.pg_collation co on co.oid = a.attcollation
where a.attrelid = %(table)s and a.attnum > 0 and not a.attisdropped
order by a.attnum
"""

# Not-null constraints are left out: PostgreSQL 18 lists them here too, 15 only as attnotnull.
_CONSTRAINTS = """
select pg_catalog.quote_ident(conname) as conname, pg_catalog.pg_get_constraintdef(oid, true) as definition
from pg_catalog.pg_constraint
where conrelid = %(table)s and contype in ('p', 'u', 'c', 'f', 'x')
order by case contype when 'p' then 0 when 'u' then 1 when 'x' then 2 when 'c' then 3 else 4 end, conname
"""

# Indexes a constraint made (its primary key, a unique constraint) are shown as that constraint.
_INDEXES = """
select pg_catalog.pg_get_indexdef(i.indexrelid) as definition
from pg_catalog.pg_index i
join pg_catalog.pg_class c on c.oid = i.indexrelid
where i.indrelid = %(table)s
  and not exists (select 1 from pg_catalog.pg_constraint k where k.conindid = i.indexrelid and k.conrelid = i.indrelid)
order by c.relname
"""

_TRIGGERS = """
select pg_catalog.pg_get_triggerdef(oid, true) as definition
from pg_catalog.pg_trigger
where tgrelid = %(table)s and not tgisinternal
order by tgname
"""

_POLICIES = """
select pg_catalog.quote_ident(polname) as polname, pg_catalog.pg_get_expr(polqual, polrelid) as qual,
    pg_catalog.pg_get_expr(polwithcheck, polrelid) as with_check, polcmd, polpermissive,
    array(select pg_catalog.quote_ident(r.rolname) from pg_catalog.pg_roles r
          where r.oid = any(polroles) order by r.rolname) as roles
from pg_catalog.pg_policy
where polrelid = %(table)s
order by polname
"""

_VIEWS = """
select c.oid::pg_catalog.regclass::text as name, c.relkind, pg_catalog.pg_get_viewdef(c.oid, true) as definition
from pg_catalog.pg_class c
where c.relnamespace = %(schema)s::regnamespace and c.relkind in ('v', 'm')
order by c.relname
"""

# Sequences behind an identity or serial column come with their column; only others are listed.
_SEQUENCES = """
select c.oid::pg_catalog.regclass::text as name
from pg_catalog.pg_class c
where c.relnamespace = %(schema)s::regnamespace and c.relkind = 'S'
  and not exists (select 1 from pg_catalog.pg_depend d
                  where d.classid = 'pg_catalog.pg_class'::regclass and d.objid = c.oid and d.deptype in ('a', 'i'))
order by c.relname
"""


def _column(row: dict[str, Any]) -> str:
    parts = [row["attname"], row["type"]]
    if row["collation"] is not None:
        parts.append(f"COLLATE {row['collation']}")
    if row["attgenerated"] == "s":
        parts.append(f"GENERATED ALWAYS AS ({row['expr']}) STORED")
    elif row["expr"] is not None:
        parts.append(f"DEFAULT {row['expr']}")
    if row["attidentity"]:
        parts.append(
            "GENERATED ALWAYS AS IDENTITY" if row["attidentity"] == "a" else "GENERATED BY DEFAULT AS IDENTITY"
        )
    if row["attnotnull"]:
        parts.append("NOT NULL")
    return " ".join(parts)


def _policy(table: str, row: dict[str, Any]) -> str:
    commands = {"r": "SELECT", "a": "INSERT", "w": "UPDATE", "d": "DELETE", "*": "ALL"}
    text = f"CREATE POLICY {row['polname']} ON {table} AS {'PERMISSIVE' if row['polpermissive'] else 'RESTRICTIVE'}"
    text += f" FOR {commands[row['polcmd']]} TO {', '.join(row['roles']) or 'PUBLIC'}"
    if row["qual"] is not None:
        text += f" USING ({row['qual']})"
    if row["with_check"] is not None:
        text += f" WITH CHECK ({row['with_check']})"
    return text + ";"


def _table(cur: psycopg.Cursor[dict[str, Any]], table: dict[str, Any]) -> str:
    """One table: CREATE TABLE with its columns and constraints, then its security, indexes and triggers."""
    name = table["name"]
    args = {"table": table["oid"]}
    lines = [_column(row) for row in cur.execute(_COLUMNS, args).fetchall()]
    lines += [f"CONSTRAINT {r['conname']} {r['definition']}" for r in cur.execute(_CONSTRAINTS, args)]
    out = [f"CREATE TABLE {name} (\n    " + ",\n    ".join(lines) + "\n);"]
    if table["relrowsecurity"]:
        out.append(f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY;")
    if table["relforcerowsecurity"]:
        out.append(f"ALTER TABLE {name} FORCE ROW LEVEL SECURITY;")
    out += [_policy(name, row) for row in cur.execute(_POLICIES, args).fetchall()]
    extras = [r["definition"] + ";" for r in cur.execute(_INDEXES, args).fetchall()]
    extras += [r["definition"] + ";" for r in cur.execute(_TRIGGERS, args).fetchall()]
    return "\n".join(out) + ("\n\n" + "\n".join(extras) if extras else "")


def _reading_order(table: dict[str, Any]) -> tuple[int, str]:
    name: str = table["relname"]
    return (TABLE_ORDER.index(name) if name in TABLE_ORDER else len(TABLE_ORDER), name)


def render(conn: psycopg.Connection[Any]) -> str:
    """The text of sql/schema.sql for the database `conn` is connected to (crontick migrated into `crontick`)."""
    cur = conn.cursor(row_factory=dict_row)
    with conn.transaction():
        cur.execute("set local search_path = pg_catalog, pg_temp")
        args = {"schema": SCHEMA}
        blocks = [_table(cur, t) for t in sorted(cur.execute(_TABLES, args).fetchall(), key=_reading_order)]
        for view in cur.execute(_VIEWS, args).fetchall():
            kind = "MATERIALIZED VIEW" if view["relkind"] == "m" else "VIEW"
            blocks.append(f"CREATE {kind} {view['name']} AS\n{view['definition']}")
        for seq in cur.execute(_SEQUENCES, args).fetchall():
            blocks.append(f"CREATE SEQUENCE {seq['name']};")
    return HEADER + "\n" + "\n\n".join(blocks) + "\n"


@contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    """A new database on `admin_url`'s server with crontick migrated into it, dropped afterwards."""
    name = f"crontick_schema_file_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    try:
        url = make_conninfo(admin_url, dbname=name)
        asyncio.run(migrate(url, SCHEMA))
        yield url
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def rendered(admin_url: str) -> str:
    """sql/schema.sql as a fresh migrate on `admin_url`'s server makes it."""
    with fresh_database(admin_url) as url, psycopg.connect(url, autocommit=True) as conn:
        return render(conn)


def stale(committed: str, fresh: str, path: str = "sql/schema.sql") -> str:
    """A unified diff from the committed file to a fresh migrate's; empty when they are equal."""
    diff = difflib.unified_diff(
        committed.splitlines(keepends=True), fresh.splitlines(keepends=True), path, f"{path} (fresh migrate)"
    )
    return "".join(diff)


def default_path() -> Path:
    return Path(str(sql_dir())).resolve() / "schema.sql"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m crontick.db.schema_file", description="Write or check sql/schema.sql from a fresh migrate."
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="write the file from a fresh migrate")
    action.add_argument(
        "--check", action="store_true", help="exit 1 with a diff when the file differs from a fresh migrate"
    )
    parser.add_argument("--url", help="a server whose role may create databases (default: an embedded PostgreSQL)")
    parser.add_argument("--file", type=Path, default=None, help="default: sql/schema.sql")
    args = parser.parse_args(argv)
    path: Path = args.file or default_path()
    url = args.url or embedded.start(Path(".crontick") / "schema-file-pg", cleanup=True)
    fresh = rendered(url)
    if args.write:
        path.write_text(fresh, encoding="utf-8")
        print(f"wrote {path}")
        return 0
    diff = stale(path.read_text(encoding="utf-8") if path.exists() else "", fresh, str(path))
    if diff:
        sys.stdout.write(diff)
        print(f"{path} is stale: run `make schema` (python -m crontick.db.schema_file --write)", file=sys.stderr)
        return 1
    print(f"{path} matches a fresh migrate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
