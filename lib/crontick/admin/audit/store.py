"""The audit log: every admin action's row, written inside the action's transaction, and its reads (who, role and,
from an authorize() hook, name, did what, when, on which filter and to how many rows; admin_audit, newest first)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from crontick.admin import actor
from crontick.admin.tx import NO_CURSOR, Conn, Row, check_limit, keyset_page, read
from crontick.db import query


async def record(
    conn: Conn | psycopg.AsyncCursor[Row], role: str | None, action: str, detail: dict[str, Any], rows: int
) -> None:
    """Record an admin action and who acted (crontick.admin.actor) inside the action's transaction."""
    params = {"role": role, "actor": actor.current(), "action": action, "detail": Jsonb(detail), "rows": rows}
    await conn.execute(query("admin_audit_insert"), params)


def target(action: str, detail: dict[str, Any]) -> str:
    """What an action was done to, in a few words: a job, a reminder, a schedule, a type or a filter."""
    for key in ("schedule", "type", "group"):
        if isinstance(detail.get(key), str) and "max_id" not in detail:
            return f"{key} {detail[key]}"
    if "job_id" in detail:
        return f"job {detail['job_id']}"
    if "booking_id" in detail:
        return f"reminder {detail['booking_id']}/{detail.get('kind')}"
    shown = {k: v for k, v in detail.items() if v is not None and k not in ("skipped",)}
    return ", ".join(f"{k}={v}" for k, v in shown.items()) or action


async def entries(conn: Conn, *, before_id: int | None = None, limit: int = 50) -> tuple[list[Row], str | None]:
    """Audit entries newest first below `before_id` (keyset on the primary key), and the next page's cursor."""
    check_limit(limit)
    async with read(conn, "audit log") as cur:
        await cur.execute(query("admin_audit_page"), {"before_id": before_id or NO_CURSOR, "limit": limit + 1})
        rows = await cur.fetchall()
    found = [
        {
            "id": r["id"],
            "at": r["at"],
            "role": r["role"],
            "actor": r["actor"],
            "action": r["action"],
            "target": target(r["action"], r["detail"] if isinstance(r["detail"], dict) else {}),
            "count": r["rows"],
            "detail": r["detail"],
        }
        for r in rows
    ]
    return keyset_page(found, limit)
