"""Helpers for the admin store's tests: run one store call on its own connection."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from crontick import db
from crontick.admin import tx

T = TypeVar("T")


def run(url: str, work: Callable[[tx.Conn], Awaitable[T]]) -> T:
    async def go() -> T:
        conn = await db.connect(url)
        try:
            return await work(conn)
        finally:
            await conn.close()

    return asyncio.run(go())
