"""The admin's database plumbing, shared by every resource's store: its own connection, short read-only and
action transactions, opaque cursors, page bounds, the roles that may act, and what an action did."""

from __future__ import annotations

import asyncio
import base64
import binascii
import weakref
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row

from crontick.db import Database, cutoff, query
from crontick.errors import BadCursor, CrontickError, DatabaseUnavailable, QueryTimeout

READ_TIMEOUT = "2s"  # admin_read_begin
ACTION_TIMEOUT = "5s"  # admin_action_begin
NO_CURSOR = 2**63 - 1  # "no cursor": below every id
MAX_LIMIT = 500
ROLES = ("admin", "viewer", "cli")
# A request's whole turn on the admin's connection: a page is a few statements of at most
# READ_TIMEOUT each, an action one of at most ACTION_TIMEOUT.
CUTOFF = cutoff.Cutoff(10.0, 10.0 + cutoff.UNWIND_SECONDS)

Conn = psycopg.AsyncConnection[Any]
Row = dict[str, Any]


# -- pages and roles ----------------------------------------------------------------------------


def check_limit(limit: int) -> int:
    """`limit` rows per page, 1 to MAX_LIMIT, else a CrontickError (the API answers it 400)."""
    if not 1 <= limit <= MAX_LIMIT:
        raise CrontickError(f"limit: expected 1 to {MAX_LIMIT}, got: {limit}")
    return limit


def check_role(role: str) -> None:
    """Only the admin role (or the CLI) changes jobs, reminders and schedules."""
    if role not in ROLES or role == "viewer":
        raise CrontickError(f"role: expected admin or cli to change jobs, got: {role!r}")


def keyset_page(rows: list[Row], limit: int) -> tuple[list[Row], str | None]:
    """A page of `limit` rows read as `limit + 1` (newest first, by id), and the next page's cursor (None at the end)."""
    if len(rows) > limit:
        return rows[:limit], encode_cursor(rows[limit - 1]["id"])
    return rows, None


@dataclass(frozen=True)
class ActionResult:
    """What an action did. `error` is None on success, else not_found | conflict | key_taken."""

    ok: bool
    error: str | None = None
    detail: str = ""
    row: Row | None = field(default=None)


# -- cursors ------------------------------------------------------------------------------------


def encode_cursor(before_id: int) -> str:
    """An opaque cursor for "rows with an id below this one"."""
    return base64.urlsafe_b64encode(f"v1:{before_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int | None:
    """The id a cursor stands for; BadCursor if it is not one of ours."""
    if cursor is None or cursor == "":
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        version, _, number = text.partition(":")
        value = int(number)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise BadCursor(cursor) from None
    if version != "v1" or not 0 < value <= NO_CURSOR:
        raise BadCursor(cursor)
    return value


# -- connection -------------------------------------------------------------------------------

# The admin's own connection per process, apart from the tick's: the tick's statements must
# never land inside an admin transaction (or the reverse) when both run at once under
# `crontick serve`. Admin requests take turns on it; each holds it for one short transaction.
# Per event loop: an asyncio connection and lock belong to the loop that made them.
_per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[asyncio.Lock, dict[str, Database]]] = (
    weakref.WeakKeyDictionary()
)


@asynccontextmanager
async def connection(database_url: str) -> AsyncIterator[Conn]:
    """The admin's connection to `database_url`, for one request at a time; dropped when it breaks."""
    loop = asyncio.get_running_loop()
    if loop not in _per_loop:
        _per_loop[loop] = (asyncio.Lock(), {})
    turn, databases = _per_loop[loop]
    database = databases.setdefault(database_url, Database(database_url))
    # Bounded like a tick: a pooler in front of a database that is down holds a statement for
    # minutes, and statement_timeout only starts once a server has it.
    async with cutoff.bounded(database, CUTOFF), turn:
        conn = await database.connection()
        try:
            yield conn
        except DatabaseUnavailable as exc:
            await cutoff.discard_after(database, exc)
            raise
        if conn.broken or conn.closed:
            await database.discard()


# -- transactions -------------------------------------------------------------------------------


def read(conn: Conn, what: str = "admin read") -> AbstractAsyncContextManager[psycopg.AsyncCursor[Row]]:
    """One read-only transaction with a short statement_timeout; yields a dict-row cursor.

    A timeout raises QueryTimeout and a lost connection DatabaseUnavailable, so a caller can
    show "unavailable" for its panel rather than fail the page.
    """
    return _transaction(conn, what, "admin_read_begin", READ_TIMEOUT)


def action(conn: Conn, what: str) -> AbstractAsyncContextManager[psycopg.AsyncCursor[Row]]:
    """One write transaction for an admin action (its audit row goes in the same one)."""
    return _transaction(conn, what, "admin_action_begin", ACTION_TIMEOUT)


@asynccontextmanager
async def _transaction(conn: Conn, what: str, begin: str, timeout: str) -> AsyncIterator[psycopg.AsyncCursor[Row]]:
    """A transaction opened by the named `begin` statement (its mode and timeout), errors translated."""
    try:
        async with conn.transaction():
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(query(begin))
            yield cur
    except psycopg.errors.QueryCanceled as exc:
        raise QueryTimeout(what, timeout) from exc
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(exc) from exc
