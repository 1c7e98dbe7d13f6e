"""`crontick migrate` applies every sql/functions/ file each time: a fresh install and every upgrade end alike.

An older crontick applied the migrations as it shipped them, with the function bodies of their
day inside (0008, 0009 and 0010 did, before the functions moved to sql/functions/). Those texts
are kept in tests/db/released_migrations/, so an upgrade here starts from the database an older
version really left: its migrations 0001..k, applied by its own migrate, then today's.
"""

from __future__ import annotations

import asyncio
import importlib
import re
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from crontick import db
from tests.db.released import RELEASED, VERSIONS, Catalog, catalog, migrate_as_released
from tests.support.constants import KEPT_OVERLOADS
from tests.support.databases import fresh_database


@pytest.fixture
def empty_database(admin_url: str) -> Iterator[str]:
    with fresh_database(admin_url, "template0") as url:
        yield url


@pytest.fixture(scope="module")
def fresh(admin_url: str) -> Catalog:
    """The catalog of a fresh install by today's migrate, in `public` (where the older versions installed)."""
    with fresh_database(admin_url, "template0") as url:
        assert asyncio.run(db.migrate(url, "public")) == VERSIONS
        return catalog(url, "public")


def test_a_fresh_install_in_its_own_schema_is_the_same_install(admin_url: str, fresh: Catalog) -> None:
    with fresh_database(admin_url, "template0") as url:
        assert asyncio.run(db.migrate(url)) == VERSIONS
        own = catalog(url, "crontick")
    # The SQL API is crontick.enqueue in its own schema, public.crontick_enqueue in public.
    public = {
        kind: [tuple(re.sub(r"\bcrontick_(enqueue|signal|cancel)\b", r"\1", str(v)) for v in row) for row in rows]
        for kind, rows in fresh.items()
    }
    mine = {kind: [tuple(str(v) for v in row) for row in rows] for kind, rows in own.items()}
    assert _unnamed({k: sorted(v) for k, v in mine.items()}, "crontick") == _unnamed(
        {k: sorted(v) for k, v in public.items()}, "public"
    )


def _unnamed(found: dict[str, Any], schema: str) -> str:
    """The catalog with its schema's name taken out where the server prints it (quoted in bodies, bare in DDL)."""
    text = repr(found).replace(f'"{schema}".', "S.")
    for before in ("FUNCTION ", "ON ", "REFERENCES "):
        text = text.replace(f"{before}{schema}.", f"{before}S.")
    # A function's pinned search_path names the schema as a string (sql/functions/reminder_next_due.sql).
    text = text.replace(f"\\'pg_catalog\\', \\'{schema}\\'", "\\'pg_catalog\\', S")
    # The probe's check of the reminder source names the default one, <schema>.bookings, as a literal.
    return text.replace(f"\\'{schema}.bookings\\'", "\\'S.bookings\\'")


def test_the_released_migrations_kept_here_are_migrations_of_today() -> None:
    kept = sorted(p.stem for p in RELEASED.glob("*.sql"))
    assert kept and set(kept) <= set(VERSIONS)


def test_a_fresh_install_has_one_function_per_file_and_nothing_else(fresh: Catalog) -> None:
    names = [name for name, _ in fresh["functions"]]
    # in public: crontick_enqueue; a file that keeps an older signature for a rolling deploy holds two
    expected = [f"crontick_{name}" for name, _ in db.function_files() for _ in range(KEPT_OVERLOADS.get(name, 1))]
    assert names == sorted(expected)
    # jobs_group_*: the groups' held flag (sql/migrations/0017_flow_claim.sql).
    assert {name for _, name, _ in fresh["triggers"]} == {
        "jobs_delete_attempts",
        "jobs_truncate_attempts",
        "jobs_group_insert",
        "jobs_group_update",
        "jobs_group_delete",
        "jobs_group_settle",
        "jobs_cancel_requested",  # crontick.cancel on a running job (sql/migrations/0040_cancel_children.sql)
        "jobs_child_ended",  # job.join's wake
    }


@pytest.mark.parametrize("count", range(1, len(VERSIONS) + 1), ids=VERSIONS)
def test_an_upgrade_from_every_earlier_version_ends_as_a_fresh_install(
    empty_database: str, fresh: Catalog, count: int
) -> None:
    migrate_as_released(empty_database, count)
    assert asyncio.run(db.migrate(empty_database, "public")) == VERSIONS[count:]
    assert catalog(empty_database, "public") == fresh


def _claim(conn: psycopg.Connection[Any], limit: int) -> list[Any]:
    params = {"now": None, "limit": limit, "lease": timedelta(seconds=60), "flow": None}
    row = conn.execute(db.query("job_claim_due"), params)
    return row.fetchone()[0] or []  # type: ignore[index]


def test_editing_a_function_file_replaces_the_live_body(
    database_url: str, conn: psycopg.Connection[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql = tmp_path / "sql"
    shutil.copytree(Path(str(db.sql_dir())), sql)
    claim_file = sql / "functions" / "job_claim_due.sql"
    body = claim_file.read_text()
    batch_bound = ") d\n    limit _limit\n"  # the plain claim's bound on its batch
    assert body.count(batch_bound) == 1
    claim_file.write_text(body.replace(batch_bound, ") d\n    limit least(_limit, 1)\n"))
    conn.execute("insert into jobs (type, payload) select 'edited', '{}' from generate_series(1, 3)")

    monkeypatch.setattr(importlib.import_module("crontick.db.migrate"), "sql_dir", lambda: sql)
    assert asyncio.run(db.migrate(database_url)) == []
    assert len(_claim(conn, 10)) == 1  # the edited claim takes one job at a time

    monkeypatch.undo()
    assert asyncio.run(db.migrate(database_url)) == []
    assert len(_claim(conn, 10)) == 2  # the shipped body again: the rest of the batch


def test_migrating_again_applies_no_migration_and_restores_every_function(empty_database: str) -> None:
    assert asyncio.run(db.migrate(empty_database)) == VERSIONS
    before = catalog(empty_database)
    with psycopg.connect(empty_database, autocommit=True) as conn:
        recorded = conn.execute("select version, applied_at from crontick_migrations order by 1").fetchall()
        # A body changed by hand (or left by an older version) is replaced by its file's.
        conn.execute(
            "create or replace function crontick_job_attempts_follow_jobs() returns trigger"
            " language plpgsql as $$ begin return null; end $$"
        )
        conn.execute("insert into jobs (type, payload) values ('kept', '{}')")
        assert catalog(empty_database) != before

        assert asyncio.run(db.migrate(empty_database)) == []
        assert catalog(empty_database) == before
        assert conn.execute("select version, applied_at from crontick_migrations order by 1").fetchall() == recorded
        job_id = conn.execute("select id from jobs where type = 'kept'").fetchone()[0]  # type: ignore[index]
        conn.execute(
            "insert into job_attempts (job_id, attempt, finished_at, outcome) values (%(id)s, 1, now(), 'retried')",
            {"id": job_id},
        )
        # The re-applied trigger function works: deleting the job takes its history with it.
        conn.execute("delete from jobs where id = %(id)s", {"id": job_id})
        assert conn.execute("select count(*) from job_attempts").fetchone() == (0,)


def _signatures(url: str, name: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "select pg_get_function_identity_arguments(oid) from pg_proc where proname = %(name)s order by 1",
            {"name": name},
        ).fetchall()
    return [row[0] for row in rows]


def test_a_changed_signature_ships_with_a_migration_that_drops_the_old_one(
    admin_url: str, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql = tmp_path / "sql"
    shutil.copytree(Path(str(db.sql_dir())), sql)
    claim_file = sql / "functions" / "job_claim_due.sql"
    claim_file.write_text(claim_file.read_text().replace("_limit int,", "_limit bigint,", 1))
    monkeypatch.setattr(importlib.import_module("crontick.db.migrate"), "sql_dir", lambda: sql)
    old, new = (
        f"_now timestamp with time zone, _limit {t}, _lease interval, _flow jsonb" for t in ("integer", "bigint")
    )

    # `create or replace` of another argument list adds an overload; the old one stays behind.
    assert asyncio.run(db.migrate(database_url)) == []
    assert _signatures(database_url, "crontick_job_claim_due") == [new, old]

    drop = "drop function if exists {schema}.crontick_job_claim_due(timestamptz, int, interval, jsonb);\n"
    (sql / "migrations" / "9999_claim_limit_bigint.sql").write_text(drop)
    assert asyncio.run(db.migrate(database_url)) == ["9999_claim_limit_bigint"]
    assert _signatures(database_url, "crontick_job_claim_due") == [new]
    with fresh_database(admin_url, "template0") as url:
        asyncio.run(db.migrate(url))  # the drop finds nothing to drop on a fresh install
        assert catalog(url) == catalog(database_url)


def test_the_hook_record_function_keeps_the_previous_releases_signature_beside_its_own(database_url: str) -> None:
    """Code of the previous release still calls the 10 arguments while today's schema is in place (a rolling
    deploy); the kept one is a wrapper, and a 10-argument call is not ambiguous (no default on _priority)."""
    old = (
        "_hook text, _event_id text, _body_sha256 bytea, _received_at timestamp with time zone, _type text,"
        " _payload jsonb, _group_key text, _debounce_key text, _debounce_seconds double precision,"
        " _debounce_max_seconds double precision"
    )
    assert _signatures(database_url, "crontick_inbound_event_record") == [old, old + ", _priority integer"]
    assert len(_signatures(database_url, "crontick_inbound_event_record")) == KEPT_OVERLOADS["inbound_event_record"]
