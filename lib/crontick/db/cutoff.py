"""The hard stop of every request that touches the database: its time budget plus a margin that ends before its leases do."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import psycopg

from crontick.errors import DatabaseTimeout, DatabaseUnavailable
from crontick.settings import Settings

if TYPE_CHECKING:
    from crontick.db.connection import Database

# At most this long past the budget. A tick's handlers are stopped at the budget; what is left
# (recording outcomes, upkeep) takes milliseconds unless the database is out of reach.
CUTOFF_MARGIN_SECONDS = 2.0
# After its socket is cut, how long the request has to fail on its own before it is cancelled
# (a connect or a lock wait has no socket of its own to cut).
UNWIND_SECONDS = 0.25


class Cutoff(NamedTuple):
    seconds: float  # when the connection is cut: the budget plus a margin
    stop_seconds: float  # when whatever is still running is cancelled


def cutoff_of(settings: Settings) -> Cutoff:
    """Cut at budget + min(CUTOFF_MARGIN_SECONDS, m / 3), stop at most min(UNWIND_SECONDS, m / 3) later (m: lease - budget).

    A PgBouncer whose server is down (or whose pool is full) holds a query for its
    query_wait_timeout, 120 s by default; crontick stops waiting here instead. Both times fall
    within the first two thirds of the lease margin, so a request is over before any lease it
    took can expire (leases run lease_seconds from the claim, which comes after the request
    began): a rescue never races a tick that is still alive. Jobs a cut-off tick claimed stay
    `running` until their lease expires; then the next tick rescues them (at least once).
    """
    budget = settings.time_budget_seconds
    third = (settings.lease_seconds - budget) / 3
    cut = budget + min(CUTOFF_MARGIN_SECONDS, third)
    return Cutoff(cut, cut + min(UNWIND_SECONDS, third))


class Severable(Protocol):
    """What `bounded` cuts: a holder of at most one live connection (crontick.db.Database)."""

    def sever(self, task: asyncio.Task[Any] | None) -> psycopg.AsyncConnection[Any] | None:
        """Shut down the socket of `task`'s connection (shut_down), forget it, and return it to be closed."""
        ...


@asynccontextmanager
async def bounded(holder: Severable, limit: Cutoff) -> AsyncIterator[None]:
    """Run the block until `limit` at most (a tick's: cutoff_of(settings)); past that, raise DatabaseTimeout.

    At the cut-off the request's connection is cut under whatever statement waits on it (the
    socket is shut down, so the wait ends with an error at once, and psycopg does not try to
    cancel the query and wait again, up to 10 s more). The holder forgets it, so no request
    gets it again, and it is closed once the block has unwound. A block still
    running at the stop (connecting, or waiting for another request's turn) is cancelled.
    Whatever the block raised after the cut becomes DatabaseTimeout: the caller answers 503
    with Retry-After, as for a refused connection.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()  # the request's: the timer below fires outside it
    cut: list[psycopg.AsyncConnection[Any] | None] = []
    timer = loop.call_later(limit.seconds, lambda: cut.append(holder.sever(task)))
    try:
        async with asyncio.timeout(limit.stop_seconds):
            yield
    except Exception as exc:
        if not cut:
            raise
        raise DatabaseTimeout(limit.seconds) from exc
    finally:
        timer.cancel()
        for conn in cut:
            if conn is not None:
                await _close(conn)


async def discard_after(database: Database, exc: DatabaseUnavailable) -> None:
    """Drop this request's connection after an outage, unless the cut-off already did."""
    if not isinstance(exc, DatabaseTimeout):
        await database.discard()


async def _close(conn: psycopg.AsyncConnection[Any]) -> None:
    try:
        await conn.close()
    except psycopg.Error:
        pass
