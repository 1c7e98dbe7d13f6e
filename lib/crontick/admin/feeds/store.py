"""The feeds' reads: inbound hook events and the alert outbox, keyset lists in tx.read's short read-only transaction."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime

from crontick.admin.params import storable
from crontick.admin.tx import NO_CURSOR, Conn, Row, check_limit, keyset_page, read
from crontick.db import query
from crontick.errors import BadCursor, CrontickError
from crontick.tick.alerts import STATUSES as ALERT_STATUSES

__all__ = [
    "ALERT_STATUSES",
    "EventCursor",
    "declared_hooks",
    "decode_event_cursor",
    "encode_event_cursor",
    "list_alerts",
    "list_events",
]

EventCursor = tuple[datetime, str, str]


def declared_hooks() -> list[dict[str, str]]:
    """The hooks `crontick.inbound(...)` declared in this process, by name: never their secrets."""
    from crontick.hooks.inbound import hooks as declared

    return [
        {"name": h.name, "verify": h.verify, "job_type": h.job_type}
        for h in sorted(declared().values(), key=lambda h: h.name)
    ]


def encode_event_cursor(row: Row) -> str:
    """An opaque cursor for "events older than this one" (events have no id: received_at, hook, event_id)."""
    text = json.dumps(["e1", row["received_at"].isoformat(), row["hook"], row["event_id"]], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_event_cursor(cursor: str | None) -> EventCursor | None:
    """The event a cursor stands for; BadCursor if it is not one of ours."""
    if cursor is None or cursor == "":
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode())
        version, at, hook, event_id = value
        when = datetime.fromisoformat(at)
        # In UTC: PostgreSQL refuses offsets past ±15:59 that Python takes (OverflowError near year 1).
        when = when.astimezone(UTC) if when.tzinfo is not None else when
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError, RecursionError, OverflowError):
        raise BadCursor(cursor) from None
    # The cursor's text goes back to PostgreSQL, which cannot store a NUL or a lone surrogate.
    texts_ok = isinstance(hook, str) and isinstance(event_id, str) and storable(hook) and storable(event_id)
    if version != "e1" or when.tzinfo is None or not texts_ok:
        raise BadCursor(cursor)
    return when, hook, event_id


async def list_events(
    conn: Conn, *, hook: str | None = None, before: EventCursor | None = None, limit: int = 50
) -> tuple[list[Row], str | None]:
    """Recorded inbound events newest first (hook, event_id, job_id, received_at), and the next page's cursor."""
    check_limit(limit)
    at, last_hook, last_event = before if before is not None else ("infinity", "", "")
    params = {"hook": hook, "before_at": at, "before_hook": last_hook, "before_event": last_event, "limit": limit + 1}
    async with read(conn, "inbound events list") as cur:
        await cur.execute(query("admin_inbound_events_by_hook" if hook is not None else "admin_inbound_events"), params)
        rows = await cur.fetchall()
    if len(rows) > limit:
        return rows[:limit], encode_event_cursor(rows[limit - 1])
    return rows, None


async def list_alerts(
    conn: Conn, *, status: str | None = None, before_id: int | None = None, limit: int = 50
) -> tuple[list[Row], str | None]:
    """The alert outbox newest first (the first 200 characters of each error, never the body), and the next cursor."""
    check_limit(limit)
    if status is not None and status not in ALERT_STATUSES:
        raise CrontickError(f"status: expected one of {', '.join(ALERT_STATUSES)}, got: {status!r}")
    params = {"status": status, "before_id": before_id or NO_CURSOR, "limit": limit + 1}
    async with read(conn, "alerts list") as cur:
        await cur.execute(query("admin_alerts_by_status" if status is not None else "admin_alerts"), params)
        rows = await cur.fetchall()
    return keyset_page(rows, limit)
