"""crontick in an app's own test suite: run every due job now, move the queue's clock forward, read what was enqueued.

Each function takes the psycopg 3 connection of the (migrated) database the test uses, with no
transaction open (autocommit, or committed): the jobs run on a connection of their own, which sees
only what was committed. The pytest fixtures are in `crontick.testing.plugin`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from crontick import db
from crontick.errors import CrontickError
from crontick.runtime import Runtime
from crontick.settings import Settings

__all__ = ["advance", "drain", "enqueued"]

# The columns of each job enqueued() returns.
JOB_COLUMNS = (
    "id", "type", "payload", "status", "attempts", "max_attempts", "run_after", "key", "group_key", "priority",
    "last_error", "created_at", "start_by",
)  # fmt: skip
# advance() moves every stored time back in two steps, the first this much further, so that no row
# lands on a time another row still holds (a slot's primary key, an alert's unique occurrence).
_APART = "1000 years"


def drain(conn: psycopg.Connection[Any], *, settings: Settings | None = None) -> dict[str, Any]:
    """Run every job that is due, in this process, tick after tick, until none is due; return the summed summary.

    Jobs that come due while it runs (a follow-up a handler enqueued, a retry whose time has come)
    run too; a job not due yet is never waited for (see advance()). The summary is the tick's JSON,
    summed, as `crontick tick --drain` prints it. `settings`: default Settings.from_env(), with the
    database always `conn`'s. Callable from async tests too: the ticks then run in a thread of their own.
    """
    _check_committed(conn)
    base = settings if settings is not None else Settings.from_env()
    ticking = dataclasses.replace(base, database_url=_url_of(conn))
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_drain(ticking))
    with ThreadPoolExecutor(1) as thread:  # inside a running loop (an async test): asyncio.run needs its own
        return thread.submit(asyncio.run, _drain(ticking)).result()


async def _drain(settings: Settings) -> dict[str, Any]:
    runtime = Runtime(settings, strict=True)
    try:
        result = await runtime.run(source="test", drain=True)
    finally:
        await runtime.close()
    return result.to_json()


def advance(conn: psycopg.Connection[Any], seconds: float) -> None:
    """Move the queue's clock forward by `seconds`; calls add up.

    Every time crontick has stored (a job's run_after, a sleep's or a wait's deadline, a rate
    limit's window, a schedule's cursor, a booking's start) moves back by `seconds`, in one
    transaction, so whatever would come due within them (a retry, a snooze, a `job.sleep`, a
    schedule's slot, a reminder) is due at the next drain(). The database's clock is not touched:
    a schedule's slots stay where the real clock puts them.
    """
    if not seconds >= 0:
        raise CrontickError(f"expected seconds >= 0 to advance the queue's clock by, got {seconds!r}")
    _check_committed(conn)
    schema = db.current_schema()
    rows = conn.execute(
        """select c.table_name, c.column_name, c.data_type = 'ARRAY'
        from information_schema.columns c
        join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
        where c.table_schema = %(schema)s and t.table_type = 'BASE TABLE'
            and (c.data_type = 'timestamp with time zone'
                 or c.data_type = 'ARRAY' and c.udt_name = '_timestamptz')
        order by c.table_name, c.ordinal_position""",
        {"schema": schema},
    ).fetchall()
    by_table: dict[str, list[tuple[str, bool]]] = {}
    for table, column, is_array in rows:
        by_table.setdefault(table, []).append((column, is_array))
    with conn.transaction():
        for table, columns in by_table.items():
            for shift in ("%(apart)s::interval + %(by)s::interval", "- %(apart)s::interval"):
                conn.execute(
                    _shift_statement(schema, table, columns, shift), {"by": f"{seconds} seconds", "apart": _APART}
                )


def _shift_statement(schema: str, table: str, columns: list[tuple[str, bool]], shift: str) -> sql.Composed:
    """`update <table> set <column> = <column> - (<shift>), ...` over each time column (and each element of an array of them)."""
    by = sql.SQL(shift)
    sets = []
    for column, is_array in columns:
        name = sql.Identifier(column)
        if is_array:
            value = sql.SQL("array(select t - ({by}) from pg_catalog.unnest({name}) t)").format(by=by, name=name)
        else:
            value = sql.SQL("{name} - ({by})").format(name=name, by=by)
        sets.append(sql.SQL("{name} = {value}").format(name=name, value=value))
    return sql.SQL("update {table} set {sets}").format(
        table=sql.Identifier(schema, table), sets=sql.SQL(", ").join(sets)
    )


def enqueued(conn: psycopg.Connection[Any], type: str | None = None) -> list[dict[str, Any]]:  # noqa: A002 - the contract's name
    """The queue's jobs (of `type`, if given), oldest first, each a dict of JOB_COLUMNS (id, type, payload, status, ...)."""
    statement = sql.SQL(
        "select {columns} from {jobs} where %(type)s::text is null or type = %(type)s order by id"
    ).format(
        columns=sql.SQL(", ").join(map(sql.Identifier, JOB_COLUMNS)),
        jobs=sql.Identifier(db.current_schema(), "jobs"),
    )
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(statement, {"type": type}).fetchall()


def _check_committed(conn: psycopg.Connection[Any]) -> None:
    status = conn.info.transaction_status
    if status != psycopg.pq.TransactionStatus.IDLE:
        raise CrontickError(
            "expected a connection with no transaction open (autocommit=True, or commit first: the jobs run on a "
            f"connection of their own and see only what was committed), got one whose transaction is {status.name}"
        )


def _url_of(conn: psycopg.Connection[Any]) -> str:
    """`conn`'s conninfo, with its password (ConnectionInfo.dsn leaves it out)."""
    password = conn.info.password
    return make_conninfo(conn.info.dsn, password=password) if password else conn.info.dsn
