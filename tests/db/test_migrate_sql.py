"""`crontick migrate --sql` prints what `crontick migrate` would run, for teams that apply migrations with
their own tool: applied by hand, the script leaves the same database, and migrate then finds nothing to do."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import psycopg
import pytest

from crontick import db
from tests.db.released import VERSIONS, catalog
from tests.support.databases import fresh_database
from tests.support.run_cli import cli_env, crontick


@pytest.fixture
def empty_database(admin_url: str) -> Iterator[str]:
    with fresh_database(admin_url, "template0") as url:
        yield url


def _printed(*args: str, **env: str) -> str:
    result = crontick("migrate", "--sql", *args, env=cli_env(None, **env))
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_printed_script_is_a_whole_migrate(empty_database: str, admin_url: str) -> None:
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute(_printed().encode())
    assert asyncio.run(db.migrate(empty_database)) == []  # recorded as migrate records: nothing left to do
    with fresh_database(admin_url, "template0") as url:
        assert asyncio.run(db.migrate(url)) == VERSIONS
        assert catalog(empty_database) == catalog(url)


def test_after_a_version_it_prints_only_what_follows_and_applies_on_top(empty_database: str, admin_url: str) -> None:
    partial = _printed("--after", VERSIONS[9][:4])
    assert f"values ('{VERSIONS[10]}')" in partial and f"values ('{VERSIONS[9]}')" not in partial
    with psycopg.connect(empty_database, autocommit=True) as conn:
        full = _printed()  # an install at 0010: the whole script cut after 0010's record (its functions come later)
        conn.execute(
            full.split(f"values ('{VERSIONS[9]}');")[0].encode() + f"values ('{VERSIONS[9]}'); commit;".encode()
        )
        conn.execute(partial.encode())
        versions = [r[0] for r in conn.execute("select version from crontick.crontick_migrations order by 1")]
    assert versions == VERSIONS
    with fresh_database(admin_url, "template0") as url:
        asyncio.run(db.migrate(url))
        assert catalog(empty_database) == catalog(url)


def test_the_script_names_the_schema_crontick_schema_gives() -> None:
    assert 'create table if not exists "my_app".crontick_migrations' in _printed(CRONTICK_SCHEMA="my_app")
    bad = crontick("migrate", "--sql", "--after", "0099", env=cli_env(None))
    assert bad.returncode == 1 and "expected one of 0001_init" in bad.stderr and "Traceback" not in bad.stderr
