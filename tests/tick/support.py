"""Helpers of the tick's duty tests: their settings, a coroutine on a connection of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import psycopg

from crontick import db
from crontick.settings import Settings
from crontick.tick.duty import Tick
from tests.support.constants import TEST_SECRET

# duty_run(duty, answer, ...) (the fixture in tests/tick/conftest.py): counts, tick, statements.
DutyRun = Callable[..., tuple[Any, Tick, list[str]]]


def settings_for(url: str, **changes: Any) -> Settings:
    return Settings(database_url=url, cron_secret=TEST_SECRET, reminder_channel="console", **changes)


def on_conn(url: str, fn: Callable[[psycopg.AsyncConnection[Any]], Any]) -> Any:
    """`fn(conn)` awaited on a new connection."""

    async def go() -> Any:
        conn = await db.connect(url)
        try:
            return await fn(conn)
        finally:
            await conn.close()

    return asyncio.run(go())
