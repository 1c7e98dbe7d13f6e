"""sql/schema.sql is the schema a fresh migrate makes, and `python -m crontick.db.schema_file --check` says when it is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from crontick.db import schema_file


def test_the_committed_schema_file_is_what_a_fresh_migrate_makes(conn: psycopg.Connection[Any]) -> None:
    committed = schema_file.default_path().read_text(encoding="utf-8")
    fresh = schema_file.render(conn)
    assert schema_file.stale(committed, fresh) == "", "sql/schema.sql is stale: run `make schema`"


def test_the_file_reads_jobs_first_with_its_defaults_and_names_where_the_functions_are() -> None:
    text = schema_file.default_path().read_text(encoding="utf-8")
    assert text.startswith("-- crontick's live schema")
    assert "GENERATED, DO NOT EDIT" in text and "make schema" in text and "sql/functions/" in text
    first = text.index("CREATE TABLE ")
    assert text[first:].startswith("CREATE TABLE crontick.jobs (")
    assert "    max_attempts integer DEFAULT 4 NOT NULL,\n" in text
    assert "CREATE UNIQUE INDEX jobs_key_active ON crontick.jobs" in text
    assert "CREATE TRIGGER jobs_group_insert BEFORE INSERT ON crontick.jobs" in text


def test_write_then_check_passes_and_a_changed_file_fails_with_a_diff(
    admin_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "schema.sql"
    assert schema_file.main(["--write", "--url", admin_url, "--file", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == schema_file.default_path().read_text(encoding="utf-8")
    assert schema_file.main(["--check", "--url", admin_url, "--file", str(path)]) == 0
    capsys.readouterr()

    path.write_text(
        path.read_text(encoding="utf-8").replace("DEFAULT 4 NOT NULL", "DEFAULT 5 NOT NULL"), encoding="utf-8"
    )
    assert schema_file.main(["--check", "--url", admin_url, "--file", str(path)]) == 1
    out = capsys.readouterr()
    assert "-    max_attempts integer DEFAULT 5 NOT NULL,\n+    max_attempts integer DEFAULT 4 NOT NULL,\n" in out.out
    assert "is stale: run `make schema`" in out.err


def test_a_fresh_migrate_leaves_no_database_behind(admin_url: str) -> None:
    def databases() -> set[str]:
        with psycopg.connect(admin_url, autocommit=True) as c:
            rows = c.execute("select datname from pg_database where datname like 'crontick_schema_file_%'").fetchall()
        return {r[0] for r in rows}

    before = databases()
    with schema_file.fresh_database(admin_url) as url, psycopg.connect(url) as c:
        assert c.execute("select count(*) from crontick.jobs").fetchone() == (0,)
    assert databases() == before
