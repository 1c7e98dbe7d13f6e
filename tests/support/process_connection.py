"""One database connection per process for CRONTICK_HANDLERS modules whose jobs record their runs (tests and chaos)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import psycopg

from crontick import db


class ProcessConnection:
    """A connection to DATABASE_URL opened by the first job that needs it, and again once it is closed
    (the database restarted); jobs running at once in this process share it."""

    def __init__(self) -> None:
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> psycopg.AsyncConnection[Any]:
        async with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = await db.connect(os.environ["DATABASE_URL"])
        return self._conn
