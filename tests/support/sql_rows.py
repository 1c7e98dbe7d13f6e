"""What the row-shape tests (tests/tick/test_*_rows.py) read of a SQL function: its output columns, as the
database has them, and its file's text."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from tests.support.constants import ROOT

FUNCTIONS = ROOT / "sql" / "functions"


def output_columns(conn: psycopg.Connection[Any], function: str) -> tuple[str, ...]:
    """The names of `function`'s output columns (its `returns table (...)`), in order; `function` is a name, or
    a name and its argument types when it has overloads (`crontick_tick_probe(timestamptz, ...)`)."""
    cast = sql.SQL("regprocedure" if "(" in function else "regproc")
    row = conn.execute(
        sql.SQL(
            """select array(select a.name from unnest(p.proargnames, p.proargmodes::text[])
                                          with ordinality a(name, mode, i)
                            where a.mode in ('o', 't') order by a.i)
            from pg_catalog.pg_proc p where p.oid = %s::{}"""
        ).format(cast),
        [function],
    ).fetchone()
    assert row is not None
    return tuple(row[0])


def function_text(name: str) -> str:
    """sql/functions/<name>.sql."""
    return (FUNCTIONS / f"{name}.sql").read_text()
