"""The migrations as older versions shipped them, and the catalog a migrate leaves: for the upgrade tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from crontick import db
from crontick.db.schema import compose_script

RELEASED = Path(__file__).parent / "released_migrations"
VERSIONS = [version for version, _ in db.migration_files()]

# Everything `crontick migrate` leaves in the database that code or people rely on.
# An install from before 0.2 lives in `public` (CRONTICK_SCHEMA=public upgrades it in place); a new one in `crontick`.
CATALOG = {
    "functions": "select p.proname, pg_get_functiondef(p.oid) from pg_proc p"
    " where p.pronamespace = %(schema)s::regnamespace order by 1, 2",
    "triggers": "select tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) from pg_trigger"
    " where not tgisinternal and tgrelid::regclass::text not like 'pg_%%' order by 1, 2",
    "relations": "select relname, relkind, relrowsecurity from pg_class"
    " where relnamespace = %(schema)s::regnamespace order by 1",
    "columns": "select table_name, column_name, ordinal_position, data_type, column_default, is_nullable,"
    " is_identity, is_generated, generation_expression from information_schema.columns"
    " where table_schema = %(schema)s order by 1, 2",
    "constraints": "select conrelid::regclass::text, conname, pg_get_constraintdef(oid) from pg_constraint"
    " where connamespace = %(schema)s::regnamespace order by 1, 2",
    "indexes": "select tablename, indexname, indexdef from pg_indexes where schemaname = %(schema)s order by 1, 2",
}
Catalog = dict[str, list[tuple[Any, ...]]]


def catalog(url: str, schema: str = "crontick") -> Catalog:
    with psycopg.connect(url) as conn:
        return {kind: conn.execute(sql, {"schema": schema}).fetchall() for kind, sql in CATALOG.items()}


def released_migrations() -> list[tuple[str, str]]:
    """The migrations as older versions shipped them, into `public`: today's text (its names in
    `public`, as the unqualified names of their day were) unless it changed since."""
    kept = {p.stem: p.read_text(encoding="utf-8") for p in RELEASED.glob("*.sql")}
    return [(version, kept.get(version) or compose_script(text, "public")) for version, text in db.migration_files()]


def migrate_as_released(url: str, count: int) -> None:
    """What an older crontick's migrate did: the first `count` migrations, recorded, in one transaction."""
    with psycopg.connect(url) as conn:
        conn.execute(
            "create table if not exists public.crontick_migrations ("
            " version text primary key, applied_at timestamptz not null default now())"
        )
        functions = dict(db.function_files())
        for version, text in released_migrations()[:count]:
            # A migration that names a function in `-- requires:` shipped with its migrate applying it first.
            for name in db.required_functions(text):
                conn.execute(compose_script(functions[name], "public").encode())
            conn.execute(text.encode())
            conn.execute("insert into public.crontick_migrations (version) values (%(v)s)", {"v": version})
