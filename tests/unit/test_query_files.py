"""The named-query loader: `-- name: x` blocks split correctly, names are unique, parameters are named."""

from __future__ import annotations

import re

import pytest

from crontick import db

SAMPLE = """-- header comment, not a query

-- name: first_query
-- who runs it
select 1;

-- name: second_query
select %(x)s
from t;
"""


def test_blocks_split_at_each_name_line() -> None:
    assert db.parse_queries(SAMPLE) == {
        "first_query": "-- who runs it\nselect 1",
        "second_query": "select %(x)s\nfrom t",
    }


def test_text_before_the_first_name_is_ignored() -> None:
    assert "header" not in "".join(db.parse_queries(SAMPLE).values())


def test_duplicate_names_in_one_file_fail() -> None:
    with pytest.raises(ValueError, match="expected unique query names, got 'q' twice"):
        db.parse_queries("-- name: q\nselect 1;\n-- name: q\nselect 2;\n")


def test_a_file_without_names_has_no_queries() -> None:
    assert db.parse_queries("select 1;\n") == {}


def test_the_core_queries_are_loaded() -> None:
    core = {
        "job_insert",
        "job_insert_many",
        "job_rescue_expired",
        "job_claim_due",
        "job_record_outcomes",
        "health_status",
        "admin_jobs",
        "admin_job_retry",
        "admin_job_get",
    }
    assert core <= set(db.QUERIES)


@pytest.mark.parametrize("name", sorted(db.QUERIES))
def test_every_query_is_non_empty_and_uses_named_parameters_only(name: str) -> None:
    text = db.query(name)
    assert text and not text.endswith(";")
    # A positional %s would make the parameter order part of the API; only %(name)s is allowed.
    # (%% is a literal percent sign, as in pg_catalog.format's '%%s' placeholders.)
    assert not re.search(r"%s\b", text.replace("%%", "")), f"{name} uses a positional parameter"


def test_migrations_are_numbered_and_in_order() -> None:
    versions = [version for version, _ in db.migration_files()]
    assert versions and versions == sorted(versions)
    assert all(re.fullmatch(r"\d{4}_\w+", v) for v in versions)
    assert versions[0] == "0001_init"
