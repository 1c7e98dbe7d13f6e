"""crontick.db.Database: one connection per running request, kept for the request's statements, reused after it, capped."""

from __future__ import annotations

import asyncio

from crontick.db import Database


async def _pid(database: Database, hold: asyncio.Event | None = None) -> int:
    """The backend this task is served by; the same on every call while the task runs."""
    first = await database.connection()
    if hold is not None:
        await hold.wait()
    again = await database.connection()
    assert again is first
    return first.info.backend_pid


def test_requests_running_together_get_their_own_connections_and_later_ones_reuse_them(database_url: str) -> None:
    async def go() -> None:
        database = Database(database_url, max_connections=4)
        try:
            hold = asyncio.Event()
            both = asyncio.gather(_pid(database, hold), _pid(database, hold))
            await asyncio.sleep(0.05)
            hold.set()
            a, b = await both
            assert a != b  # while one request waits, another is not queued behind it
            later = [await asyncio.create_task(_pid(database)) for _ in range(3)]
            assert set(later) <= {a, b}  # one after another: each finds an idle one, nothing new is opened
        finally:
            await database.close()

    asyncio.run(go())


def test_past_the_cap_requests_share_a_connection(database_url: str) -> None:
    async def go() -> None:
        database = Database(database_url, max_connections=2)
        try:
            hold = asyncio.Event()
            tasks = [asyncio.create_task(_pid(database, hold)) for _ in range(3)]
            await asyncio.sleep(0.05)
            hold.set()
            assert len(set(await asyncio.gather(*tasks))) == 2
        finally:
            await database.close()

    asyncio.run(go())


def test_discard_drops_only_the_requests_own_connection(database_url: str) -> None:
    async def broken_request(database: Database, hold: asyncio.Event) -> tuple[int, int]:
        before = (await database.connection()).info.backend_pid
        await hold.wait()
        await database.discard()
        return before, (await database.connection()).info.backend_pid

    async def go() -> None:
        database = Database(database_url)
        try:
            hold, held_meanwhile = asyncio.Event(), asyncio.Event()
            other = asyncio.create_task(_pid(database, held_meanwhile))  # still running throughout
            mine = asyncio.create_task(broken_request(database, hold))
            await asyncio.sleep(0.05)
            hold.set()
            before, after = await mine
            held_meanwhile.set()
            kept = await other
            assert before != after and kept not in (before, after)
        finally:
            await database.close()

    asyncio.run(go())
