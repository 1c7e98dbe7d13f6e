"""crontick.db.cutoff.bounded on a real PostgreSQL: a statement still waiting at the cut-off is cut at once,
its connection is dropped for a fresh one, and a connect that never completes is cancelled."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from crontick.db import Database
from crontick.db.cutoff import bounded, cutoff_of
from crontick.errors import DatabaseTimeout
from crontick.settings import Settings
from tests.support.databases import url_of

# Cut at 1.33 s (a third of the lease margin), stop at 1.58 s; the lease (3 s) ends after both.
LIMIT = cutoff_of(Settings(time_budget_seconds=0.5, lease_seconds=3.0))


def test_a_statement_waiting_past_the_cut_off_ends_at_once_and_its_connection_is_replaced(database_url: str) -> None:
    async def scenario() -> tuple[float, bool, int]:
        db = Database(url_of(database_url))
        first = await db.connection()
        began = time.monotonic()
        with pytest.raises(DatabaseTimeout, match="expected an answer within 1.33 s"):
            async with bounded(db, LIMIT):
                await first.execute("select pg_sleep(3)")  # a pooler waiting for a server holds it the same way
        took = time.monotonic() - began
        second = await db.connection()
        cur = await second.execute("select 1")
        row = await cur.fetchone()
        await db.close()
        return took, second is first or not first.closed, row[0] if row else 0

    took, reused, one = asyncio.run(scenario())
    assert LIMIT.seconds <= took < LIMIT.stop_seconds + 0.5
    assert not reused and one == 1


def test_a_block_that_ends_in_time_keeps_its_connection(database_url: str) -> None:
    async def scenario() -> bool:
        db = Database(url_of(database_url))
        async with bounded(db, LIMIT):
            conn = await db.connection()
            await conn.execute("select pg_sleep(0.1)")
        await asyncio.sleep(1.5)  # past the cut-off: the timer was cancelled with the block
        kept = (await db.connection()) is conn and not conn.closed
        await db.close()
        return kept

    assert asyncio.run(scenario())


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word (a pooler stuck before its handshake)."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(5)
        for s in accepted:
            s.close()
        listener.close()


def test_a_connect_that_never_completes_is_cancelled_at_the_stop(silent_server: int) -> None:
    async def scenario() -> float:
        db = Database(f"postgresql://postgres@127.0.0.1:{silent_server}/crontick")
        began = time.monotonic()
        with pytest.raises(DatabaseTimeout):
            async with bounded(db, LIMIT):
                await db.connection()  # libpq's own connect_timeout is 5 s
        return time.monotonic() - began

    took = asyncio.run(scenario())
    assert LIMIT.stop_seconds <= took < LIMIT.stop_seconds + 0.5
