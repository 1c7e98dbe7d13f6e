"""Helpers of the tick's duty tests: their settings, a coroutine on a connection of its own, the app with a waker
(the settings and the app from tests/support/waking.py, which tests/wakers shares)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import psycopg

from crontick import db
from crontick.tick.duty import Tick
from tests.support.waking import TOKEN as TOKEN
from tests.support.waking import settings_for as settings_for
from tests.support.waking import waking_app as waking_app

# duty_run(duty, answer, ...) (the fixture in tests/tick/conftest.py): counts, tick, statements.
DutyRun = Callable[..., tuple[Any, Tick, list[str]]]


def on_conn(url: str, fn: Callable[[psycopg.AsyncConnection[Any]], Any]) -> Any:
    """`fn(conn)` awaited on a new connection."""

    async def go() -> Any:
        conn = await db.connect(url)
        try:
            return await fn(conn)
        finally:
            await conn.close()

    return asyncio.run(go())
