"""The reminders' reads and action over PostgreSQL: the send log, the bookings due soon, and an audited retry."""

from __future__ import annotations

from crontick.admin.audit.store import record
from crontick.admin.tx import NO_CURSOR, ActionResult, Conn, Row, action, check_limit, check_role, keyset_page, read
from crontick.db import query
from crontick.db.schema import Source
from crontick.errors import CrontickError


async def list_reminders(
    conn: Conn, *, status: str | None = None, before: int | None = None, limit: int = 50, source: Source | None = None
) -> tuple[list[Row], str | None]:
    """The reminder send log newest first (bookings from `source`), and the next page's cursor."""
    from crontick.reminders.send import STATUSES

    check_limit(limit)
    if status is not None and status not in STATUSES:
        raise CrontickError(f"status: expected one of {', '.join(STATUSES)}, got: {status!r}")
    params = {"status": status, "before_id": before or NO_CURSOR, "limit": limit + 1}
    async with read(conn, "reminders list") as cur:
        await cur.execute(query("admin_reminders_by_status" if status else "admin_reminders", source), params)
        rows = await cur.fetchall()
    return keyset_page(rows, limit)


async def due_reminders(conn: Conn, limit: int = 50, source: Source | None = None) -> list[Row]:
    """Confirmed bookings starting in the next 24 hours, soonest first, with their sends so far (from `source`)."""
    async with read(conn, "due reminders") as cur:
        await cur.execute(query("admin_reminders_due", source), {"limit": check_limit(limit)})
        return await cur.fetchall()


async def retry_reminder(conn: Conn, booking_id: str, kind: str, *, role: str = "admin") -> ActionResult:
    """A failed or unknown reminder is due again now, with one more attempt (after a person has
    checked with the provider that it did not go out)."""
    check_role(role)
    params = {"booking_id": booking_id, "kind": kind}
    async with action(conn, f"retry reminder {booking_id}/{kind}") as cur:
        await cur.execute(query("admin_reminder_retry"), params)
        row = await cur.fetchone()
        if row is None:
            await cur.execute(query("admin_reminder_status"), params)
            current = await cur.fetchone()
            if current is None:
                return ActionResult(
                    False, "not_found", f"expected a reminder send for booking {booking_id!r} kind {kind!r}, got none"
                )
            return ActionResult(
                False,
                "conflict",
                f"expected a failed or unknown reminder, got booking {booking_id!r} "
                f"kind {kind!r} with status {current['status']!r}",
            )
        await record(cur, role, "retry_reminder", params, 1)
    return ActionResult(True, row=row)
