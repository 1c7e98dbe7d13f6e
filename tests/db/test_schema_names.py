"""Every statement crontick sends names its schema: no table or function of crontick's is written bare in sql/.

A bare `jobs` would resolve through the search_path: to the host app's own `public.jobs`, or to
nothing behind a transaction pooler. `{schema}.` is filled with psycopg.sql.Identifier at load.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crontick import db
from crontick.db import schema
from crontick.errors import ConfigError

SQL = Path(str(db.sql_dir()))
COMMENT = re.compile(r"--.*$", re.MULTILINE)
CREATED = re.compile(r"\bcreate\s+(?:table|type|view|sequence)\s+(?:if\s+not\s+exists\s+)?\{schema\}\.(\w+)", re.I)
FUNCTIONS = re.compile(r"\bcreate\s+or\s+replace\s+function\s+\{schema\}\.(\w+|\{api_\w+\})", re.I)
# What a relation name follows in a statement (from jobs, join jobs, update jobs, on jobs, …).
RELATION = r"\b(?:from|join|into|update|table|references|exists|truncate|only|on|lock)\s+(?:if\s+(?:not\s+)?exists\s+)?"


def _texts() -> dict[str, str]:
    return {str(p.relative_to(SQL)): COMMENT.sub("", p.read_text(encoding="utf-8")) for p in sorted(SQL.rglob("*.sql"))}


def _names() -> tuple[set[str], set[str]]:
    texts = "\n".join(_texts().values())
    return set(CREATED.findall(texts)) | {"crontick_migrations"}, set(FUNCTIONS.findall(texts))


def test_crontick_creates_its_tables_and_functions_in_its_schema() -> None:
    tables, functions = _names()
    assert {"jobs", "bookings", "reminder_sends", "crontick_ticks", "admin_audit"} <= tables
    assert {"{api_enqueue}", "crontick_job_claim_due", "crontick_tick_probe"} <= functions


def test_no_statement_names_a_table_or_function_of_crontick_without_its_schema() -> None:
    tables, functions = _names()
    bare = []
    for path, text in _texts().items():
        for name in sorted(tables):
            bare += [f"{path}: {m.group(0)!r}" for m in re.finditer(RELATION + rf"({name})\b(?!\s*\.)", text, re.I)]
        for name in sorted(f for f in functions if not f.startswith("{")):
            bare += [f"{path}: {name}" for _ in re.finditer(rf"(?<![\w.}}]){name}\s*\(", text)]
    assert bare == []


def test_the_check_finds_a_bare_name() -> None:
    assert re.search(RELATION + r"(jobs)\b(?!\s*\.)", "select 1 from jobs where", re.I)
    assert not re.search(RELATION + r"(jobs)\b(?!\s*\.)", "select 1 from {schema}.jobs where", re.I)


def test_composition_quotes_the_schema_as_an_identifier_and_as_a_literal() -> None:
    text = "select {schema_name}, x from {schema}.jobs where payload = '{{}}'"
    assert schema.compose(text, "my_app") == "select 'my_app', x from \"my_app\".jobs where payload = '{}'"


@pytest.mark.parametrize("bad", ["Crontick", "my-app", "pg_temp", "information_schema", "a" * 64, "x; drop"])
def test_a_schema_name_that_is_not_a_plain_identifier_is_refused(bad: str) -> None:
    with pytest.raises(ConfigError, match="CRONTICK_SCHEMA: expected"):
        schema.checked(bad)


def test_the_schema_comes_from_crontick_schema_and_defaults_to_crontick() -> None:
    assert schema.from_env({}) == "crontick"
    assert schema.from_env({"CRONTICK_SCHEMA": " public "}) == "public"
