"""The admin's Schedules page: each declared schedule with its last and next slot and its recent decisions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin.pages import panel
from crontick.admin.tx import read
from crontick.admin.view import View, gate
from crontick.db import query
from crontick.schedules import listing as schedules_listing


async def _rows(conn: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The three named reads `crontick schedules` runs, in one read-only transaction with the admin's timeout."""
    async with read(conn, "schedules") as cur:
        await cur.execute(query("schedule_list"))
        stored = await cur.fetchall()
        await cur.execute(query("schedule_recent_slots"), {"per_schedule": schedules_listing.RECENT_PER_SCHEDULE})
        recent = await cur.fetchall()
        await cur.execute(query("schedule_pauses"))
        pauses = await cur.fetchall()
    return stored, recent, pauses


def _instant(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


async def schedules(request: Request) -> Response:
    async def build(view: View) -> Response:
        rows = await panel(view, _rows)
        items = None if rows is None else schedules_listing.build_listing(rows[0], rows[1], view.now, rows[2])
        if view.json:
            return view.page("schedules.html", {"schedules": items}, title="Schedules", nav="schedules")
        for item in items or []:
            item["last_at"], item["next_at"] = _instant(item["last_slot"]), _instant(item["next_slot"])
            for d in item["recent"]:
                d["slot_at"], d["last_at"] = _instant(d["slot"]), _instant(d["last_slot"])
        return view.page("schedules.html", {"schedules": items}, title="Schedules", nav="schedules")

    return await gate(request, build)
