"""The scheduler's dead man's switch: whether a tick has finished recently enough, read in one statement."""

from __future__ import annotations

from typing import Any, NamedTuple

import psycopg

from crontick.db import query
from crontick.errors import DatabaseUnavailable
from crontick.settings import Settings

# Stale after two missed ticks: one late or dropped run (GitHub delays them by hours) is normal.
STALE_AFTER_INTERVALS = 2


class Health(NamedTuple):
    last_tick_at: str | None  # ISO-8601
    stale: bool
    reminders_error: str | None = None  # the newest tick's: reminders are stopped, and why

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"ok": True, "last_tick_at": self.last_tick_at, "stale": self.stale}
        if self.reminders_error is not None:
            body["reminders_error"] = self.reminders_error
        return body


def stale_after_seconds(settings: Settings) -> float:
    """How long without a finished tick before the scheduler counts as silent."""
    return STALE_AFTER_INTERVALS * settings.expected_interval_seconds


async def read(conn: psycopg.AsyncConnection[Any], settings: Settings) -> Health:
    """The newest tick and whether it is stale, by the database's clock (no tick ever run is stale)."""
    try:
        cur = await conn.execute(query("health_status"), {"stale_after": stale_after_seconds(settings)})
        row = await cur.fetchone()
    except psycopg.OperationalError as exc:  # lost, or refused by a pooler ("server login has been failing")
        raise DatabaseUnavailable(exc) from exc
    assert row is not None  # an aggregate always returns its one row
    last, stale, reminders_error = row
    return Health(last.isoformat() if last else None, bool(stale), reminders_error)


def strict(value: str | None) -> bool:
    """?strict=1 (or true/yes): answer 503 while stale, for an uptime monitor."""
    return (value or "").strip().lower() in ("1", "true", "yes", "on")
