"""The schema's invariants agree with the code: status values, plain-SQL defaults, constraint names."""

from __future__ import annotations

import re
from typing import Any

import psycopg
import pytest

from crontick.jobs.queue import STATUSES


def _status_check_values(conn: psycopg.Connection[Any]) -> set[str]:
    row = conn.execute(
        "select pg_get_constraintdef(oid) from pg_constraint"
        " where conrelid = 'jobs'::regclass and conname = 'jobs_status_valid'"
    ).fetchone()
    assert row is not None, "the jobs_status_valid CHECK constraint is missing"
    return set(re.findall(r"'(\w+)'::text", row[0]))


def test_python_statuses_match_the_check_constraint(conn: psycopg.Connection[Any]) -> None:
    assert _status_check_values(conn) == set(STATUSES)


def test_each_python_status_is_accepted_by_the_database(conn: psycopg.Connection[Any]) -> None:
    for status in STATUSES:
        conn.execute(
            "insert into jobs (type, payload, status, locked_until) values ('t', '{}', %(s)s, now())", {"s": status}
        )
    assert conn.execute("select count(distinct status) from jobs").fetchone() == (len(STATUSES),)


def test_an_unknown_status_is_refused_by_name(conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.errors.CheckViolation, match="jobs_status_valid"):
        conn.execute("insert into jobs (type, payload, status) values ('t', '{}', 'sleeping')")


def test_plain_insert_gets_the_contract_defaults(conn: psycopg.Connection[Any]) -> None:
    row = conn.execute(
        "insert into jobs (type, payload) values ('t', '{\"a\": 1}')"
        " returning status, attempts, max_attempts, run_after <= now(), last_error, created_at is not null, updated_at is not null"
    ).fetchone()
    assert row == ("pending", 0, 4, True, None, True, True)


def test_running_without_a_lease_is_refused(conn: psycopg.Connection[Any]) -> None:
    # A running row with no lease could never be rescued, so the schema forbids it.
    with pytest.raises(psycopg.errors.CheckViolation, match="jobs_running_has_lease"):
        conn.execute("insert into jobs (type, payload, status) values ('t', '{}', 'running')")
