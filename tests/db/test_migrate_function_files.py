"""Every SQL function lives in sql/functions/<name>.sql, named after it; migrations create none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crontick import db
from tests.support.constants import KEPT_OVERLOADS

SQL = Path(str(db.sql_dir()))
CREATE = re.compile(r"\bcreate\s+(?:or\s+replace\s+)?(?:function|procedure)\s+([\w.\"{}]+)", re.IGNORECASE)
EXECUTE_FUNCTION = re.compile(r"\bexecute\s+(?:function|procedure)\s+\{schema\}\.crontick_(\w+)\s*\(", re.IGNORECASE)
# The SQL API users call from any language keeps its plain name (crontick.enqueue); crontick's own
# functions are crontick_<file name>.
SQL_API = {"enqueue", "signal", "cancel"}


def function_name(stem: str) -> str:
    return f"{{schema}}.{{api_{stem}}}" if stem in SQL_API else f"{{schema}}.crontick_{stem}"


COMMENT = re.compile(r"--.*$", re.MULTILINE)


def created(text: str) -> list[str]:
    """The names of the functions a SQL text creates, comments left out."""
    return CREATE.findall(COMMENT.sub("", text))


def test_every_function_created_anywhere_in_sql_lives_in_its_own_file() -> None:
    misplaced = []
    for path in sorted(SQL.rglob("*.sql")):
        for name in created(path.read_text(encoding="utf-8")):
            if path.parent.name != "functions" or name != function_name(path.stem):
                misplaced.append(f"{path.relative_to(SQL)}: {name}")
    assert misplaced == []


@pytest.mark.parametrize("name", [name for name, _ in db.function_files()])
def test_a_function_file_replaces_exactly_the_function_it_is_named_after(name: str) -> None:
    text = dict(db.function_files())[name]
    assert created(text) == [function_name(name)] * KEPT_OVERLOADS.get(name, 1)
    # Re-applied by every migrate: a plain `create function` would fail the second time.
    assert re.search(rf"^create or replace function {re.escape(function_name(name))}\(", text, re.MULTILINE)
    header = name if name in SQL_API else f"crontick_{name}"
    assert text.startswith(f"-- {header}: "), "expected a header saying who calls it and why"


def test_the_files_are_found_and_no_migration_creates_a_function() -> None:
    assert {"job_claim_due", "job_record_outcomes", "tick_probe"} <= {name for name, _ in db.function_files()}
    assert [version for version, text in db.migration_files() if created(text)] == []


def test_a_migration_names_the_function_file_of_every_trigger_it_creates() -> None:
    """Its functions are applied after the migrations; a trigger needs its function before."""
    files = {name for name, _ in db.function_files()}
    for version, text in db.migration_files():
        required = db.required_functions(text)
        assert set(required) <= files, version
        assert set(EXECUTE_FUNCTION.findall(COMMENT.sub("", text))) <= set(required), version


def test_required_functions_reads_the_requires_lines() -> None:
    text = "-- requires: sql/functions/a_b.sql\ncreate trigger t ...;\n--requires:  sql/functions/c.sql \n"
    assert db.required_functions(text) == ["a_b", "c"]
    assert db.required_functions("-- the trigger requires sql/functions/a.sql\n") == []
