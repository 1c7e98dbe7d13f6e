"""The scheduler's dead man's switch: whether a tick has finished recently enough, read in one statement."""

from __future__ import annotations

import sys
from datetime import datetime
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
    # With a waker set (CRONTICK_WAKER): the next booked wake-up and the last failure, and which promise broke.
    wakeups: dict[str, Any] | None = None
    stale_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"ok": True, "last_tick_at": self.last_tick_at, "stale": self.stale}
        if self.reminders_error is not None:
            body["reminders_error"] = self.reminders_error
        if self.wakeups is not None:
            body["wakeups"] = self.wakeups
        if self.stale_reason is not None:
            body["stale_reason"] = self.stale_reason
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
    health = Health(last.isoformat() if last else None, bool(stale), reminders_error)
    if settings.waker == "none":
        return health
    try:
        return await _with_wakeups(conn, settings, health)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(exc) from exc


async def _with_wakeups(conn: psycopg.AsyncConnection[Any], settings: Settings, health: Health) -> Health:
    """With a waker set, the scheduler is a slow safety net: health is also stale once due work (not held back)
    has waited more than CRONTICK_WAKEUP_GRACE_SECONDS unpicked, and shows the wake-ups' state. Two statements
    more, only here. The last failure's error text is the admin's (behind its sign-in), not this public page's."""
    from crontick.wakers import booking  # with a waker set only

    booked = await booking.status(conn)
    registry = sys.modules.get("crontick.jobs.registry")  # loaded by this process's handlers; health never loads it
    limited = sorted({t for t, _ in registry.rate_limited()}) if registry is not None else []
    cur = await conn.execute(query("health_due_waiting"), {"grace": settings.wakeup_grace_seconds, "limited": limited})
    row = await cur.fetchone()
    waiting_since = row[0] if row else None
    wakeups = {
        "next_booked_at": _iso(booked.next_booked_at),
        "last_failed_at": _iso(booked.last_failed_at),
        "failed_last_day": booked.failed_last_day,
        "due_waiting_since": _iso(waiting_since),
    }
    reason = None
    if health.stale:
        reason = (
            f"no tick has finished within 2 x CRONTICK_EXPECTED_INTERVAL_SECONDS ({stale_after_seconds(settings):g} s)"
            if health.last_tick_at
            else "no tick has ever run"
        )
    elif waiting_since is not None:
        reason = (
            f"due work has waited unpicked since {waiting_since.isoformat()}, longer than "
            f"CRONTICK_WAKEUP_GRACE_SECONDS ({settings.wakeup_grace_seconds:g} s): no wake-up came"
        )
    return health._replace(stale=reason is not None, wakeups=wakeups, stale_reason=reason)


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at else None


def strict(value: str | None) -> bool:
    """?strict=1 (or true/yes): answer 503 while stale, for an uptime monitor."""
    return (value or "").strip().lower() in ("1", "true", "yes", "on")
