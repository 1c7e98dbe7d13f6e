"""A tick's reminder work costs the same SQL statements whether 3 or 60 reminders are due: one claim, one record."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import psycopg
from psycopg import AsyncCursor

from crontick.db import QUERIES
from crontick.tick.pipeline import run_tick
from tests.support.reminders import NOW, Provider, add_due, settings_for

NAMES = {text: name for name, text in QUERIES.items()}
executed: list[str] = []


class NamingCursor(AsyncCursor[Any]):
    """Records the name of each named query it runs (or the first words of any other statement)."""

    async def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        executed.append(NAMES.get(str(query), str(query)[:40]))
        return await super().execute(query, params, **kwargs)


def statements_of_one_tick(database_url: str, provider: Provider, now: Any) -> tuple[list[str], int]:
    async def go() -> tuple[list[str], int]:
        conn = await psycopg.AsyncConnection.connect(
            database_url, autocommit=True, prepare_threshold=None, cursor_factory=NamingCursor
        )
        try:
            executed.clear()
            result = await run_tick(conn, settings_for(database_url, provider, batch_size=100), now=now)
            return list(executed), result.reminders.sent
        finally:
            await conn.close()

    return asyncio.run(go())


def test_statement_count_does_not_grow_with_the_number_due(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    add_due(conn, 3)
    few, sent_few = statements_of_one_tick(database_url, provider, NOW)
    add_due(conn, 60, now=NOW + timedelta(hours=1))
    many, sent_many = statements_of_one_tick(database_url, provider, NOW + timedelta(hours=1))
    assert (sent_few, sent_many) == (3, 60) and len(provider.requests) == 63
    assert few == many
    assert [q for q in many if q.startswith("reminder_")] == ["reminder_claim_due", "reminder_record_outcomes"]
