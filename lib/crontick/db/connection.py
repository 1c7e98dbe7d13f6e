"""Connections: autocommit and pooler-safe, reused by each request (an asyncio task) of a warm instance."""

from __future__ import annotations

import asyncio
import os
import socket
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from crontick.db import queries
from crontick.errors import CrontickError, DatabaseUnavailable, DatabaseUrlError

CONNECT_TIMEOUT_SECONDS = 5
# A connection idle longer than this is pinged before reuse: a warm serverless instance may
# hold a socket the database (or pooler) closed while the function was frozen.
PING_AFTER_IDLE_SECONDS = 10.0


async def connect(url: str) -> psycopg.AsyncConnection[Any]:
    """An autocommit connection without server-side prepared statements (pooler-safe)."""
    try:
        return await psycopg.AsyncConnection.connect(
            url, autocommit=True, prepare_threshold=None, connect_timeout=CONNECT_TIMEOUT_SECONDS
        )
    except psycopg.ProgrammingError as exc:
        raise DatabaseUrlError(url, exc) from None  # not chained: psycopg's text may quote the password
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(exc) from exc


# Connections one process opens at most: one per request running at the same moment (a tick
# keeps its own from its first statement to its last), so concurrent ticks overlap their
# statements instead of queueing on one connection. A serverless instance that serves one
# request at a time (Lambda) opens one; beyond the cap, requests share the least shared.
MAX_CONNECTIONS = 4


class _Held:
    """One open connection, how many running requests hold it, and when the last one let go."""

    __slots__ = ("conn", "holders", "last_used")

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.conn, self.holders, self.last_used = conn, 0, time.monotonic()

    def usable(self) -> bool:
        return not self.conn.closed and not self.conn.broken


class Database:
    """Lazily opened connections, reused across warm invocations and re-opened when broken.

    A request (an asyncio task) gets one connection on its first call and the same one on
    every later call, until the task ends; then the connection is free for the next request.
    """

    def __init__(self, url: str, max_connections: int = MAX_CONNECTIONS) -> None:
        self._url = url
        self._max = max_connections
        self._open: list[_Held] = []
        self._idle: list[_Held] = []  # open and held by no running task, most recently used last
        self._held: dict[asyncio.Task[Any], _Held] = {}
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()

    async def connection(self) -> psycopg.AsyncConnection[Any]:
        task = asyncio.current_task()
        assert task is not None  # always called from a coroutine
        held = self._held.get(task)
        if held is not None and held.usable():
            return held.conn
        # One opener at a time: two requests reaching a cold instance together do not both
        # open a connection past the cap.
        async with self._lock():
            if held is not None:  # broken since this task took it
                await self._drop(held)
            chosen = await self._take()
            chosen.holders += 1
            self._held[task] = chosen
            task.add_done_callback(self._release)
            return chosen.conn

    async def _take(self) -> _Held:
        """An idle connection (pinged if idle a while), else a new one, else the least shared."""
        while self._idle:
            held = self._idle.pop()
            if held.usable() and (
                time.monotonic() - held.last_used < PING_AFTER_IDLE_SECONDS or await _alive(held.conn)
            ):
                return held
            await self._drop(held)
        if len(self._open) < self._max:
            try:
                held = _Held(await connect(self._url))
            except DatabaseUnavailable:
                if not self._open:
                    raise
                # The server refuses one more (its connection limit, say): share one we have.
                return min(self._open, key=lambda h: h.holders)
            self._open.append(held)
            return held
        return min(self._open, key=lambda h: h.holders)

    def _release(self, task: asyncio.Task[Any]) -> None:
        held = self._held.pop(task, None)
        if held is None:
            return
        held.holders -= 1
        held.last_used = time.monotonic()
        if held.holders == 0 and held in self._open:
            self._idle.append(held)

    def _lock(self) -> asyncio.Lock:
        """A lock per event loop (an asyncio.Lock is bound to the loop that first uses it)."""
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def discard(self) -> None:
        """Drop this request's connection after an error; its next call opens a fresh one."""
        task = asyncio.current_task()
        held = self._held.get(task) if task is not None else None
        if held is not None:
            await self._drop(held)

    async def close(self) -> None:
        """Close every connection (at shutdown)."""
        for held in list(self._open):
            await self._drop(held)

    async def _drop(self, held: _Held) -> None:
        for where in (self._open, self._idle):
            if held in where:
                where.remove(held)
        try:
            await held.conn.close()
        except psycopg.Error:
            pass

    def sever(self, task: asyncio.Task[Any] | None) -> psycopg.AsyncConnection[Any] | None:
        """Cut `task`'s connection under whatever statement waits on it (crontick.db.cutoff), and forget it.

        Every request sharing it sees the connection lost at once; none gets it again, and the
        task's next call opens a fresh one. Returns it, for the caller to close once its own
        request has unwound.
        """
        held = self._held.pop(task, None) if task is not None else None
        if held is None:
            return None
        for where in (self._open, self._idle):
            if held in where:
                where.remove(held)
        if not held.conn.closed:
            shut_down(held.conn)
        return held.conn


async def _alive(conn: psycopg.AsyncConnection[Any]) -> bool:
    try:
        await conn.execute("select 1")
        return True
    except psycopg.Error:
        return False


def shut_down(conn: psycopg.AsyncConnection[Any]) -> None:
    """End the connection's socket in both directions, leaving the descriptor to psycopg.

    Closing the descriptor instead would pull it from under a reader registered on it; a
    shutdown wakes every waiter with end-of-file, and psycopg reports the connection lost.
    """
    try:
        fd = conn.pgconn.socket
    except psycopg.OperationalError:
        return  # already closed
    with socket.socket(fileno=os.dup(fd)) as sock:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


@contextmanager
def translated() -> Iterator[None]:
    """psycopg's errors, as the tick's callers handle them."""
    try:
        yield
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(exc) from exc
    except (
        psycopg.errors.InvalidSchemaName,
        psycopg.errors.UndefinedTable,
        psycopg.errors.UndefinedColumn,
        psycopg.errors.UndefinedFunction,
    ) as exc:
        # UndefinedFunction: the probe and the claim are functions that `crontick migrate` creates;
        # InvalidSchemaName: CRONTICK_SCHEMA names a schema no migrate has created in this database.
        raise CrontickError(
            f"the crontick tables are missing or out of date in schema {queries.current_schema()!r}: "
            "run `crontick migrate` against DATABASE_URL (with the same CRONTICK_SCHEMA)"
        ) from exc
