"""The schedules' reads (what `crontick schedules` lists) and actions: enqueue one job now outside the slots, pause and
resume (each audited).

A pause is a crontick_pauses row of kind 'schedule'. While it stands, a tick that finds the
schedule due decides its slots as skipped with the reason `paused` (crontick.schedules.slots.plan),
so nothing is enqueued and the cursor moves on. A resume decides as `paused` the slots that came
due while paused but that no tick saw, then ends the pause: the catch-up policy applies to the
slots after the resume, never to the paused ones. A tick already deciding the schedule when the
pause commits applies nothing (schedule_apply checks the pause is as its plan read it), and the
next tick decides the slots as paused.
"""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from crontick.admin.audit.store import record
from crontick.admin.tx import ActionResult, Conn, action, check_role, read
from crontick.db import query
from crontick.jobs.registry import declared_max_attempts
from crontick.schedules import listing, registry


async def listing_rows(conn: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The three named reads `crontick schedules` runs, in one read-only transaction with the admin's timeout."""
    async with read(conn, "schedules") as cur:
        await cur.execute(query("schedule_list"))
        stored = await cur.fetchall()
        await cur.execute(query("schedule_recent_slots"), {"per_schedule": listing.RECENT_PER_SCHEDULE})
        recent = await cur.fetchall()
        await cur.execute(query("schedule_pauses"))
        pauses = await cur.fetchall()
    return stored, recent, pauses


def _unknown(name: str) -> ActionResult:
    shown = name if len(name) <= 80 else name[:80] + "…"
    return ActionResult(
        False, "not_found", f"expected a schedule this app declares (crontick.schedule), got: {shown!r}"
    )


async def enqueue_now(conn: Conn, name: str, *, role: str) -> ActionResult:
    """One job of the schedule, due now, outside its slots: it takes no slot (the schedule's next
    slot still runs), and is recorded as the schedule's latest manual run."""
    check_role(role)
    declared = registry.get(name)
    if declared is None:
        return _unknown(name)
    params = {
        "name": name,
        "job_type": declared.job_type,
        "payload": Jsonb(declared.payload),
        "max_attempts": declared_max_attempts(declared.job_type),  # as the schedule's slots take it
    }
    async with action(conn, f"enqueue schedule {name}") as cur:
        await cur.execute(query("admin_schedule_enqueue"), params)
        row = await cur.fetchone()
        assert row is not None
        await record(cur, role, "enqueue_schedule", {"schedule": name, "job_id": row["id"]}, 1)
    return ActionResult(True, row={"job_id": row["id"], "schedule": name})


async def pause(conn: Conn, name: str, *, role: str) -> ActionResult:
    """Pause the schedule: from its next decision on it enqueues nothing and records its slots as `paused`."""
    check_role(role)
    if registry.get(name) is None:
        return _unknown(name)
    async with action(conn, f"pause schedule {name}") as cur:
        await cur.execute(query("admin_schedule_pause"), {"name": name, "role": role})
        added = await cur.fetchone()
        first = added is not None
        if added is None:  # already paused: the first pause stands
            await cur.execute(query("admin_schedule_paused"), {"name": name})
            added = await cur.fetchone()
        await record(cur, role, "pause_schedule", {"schedule": name}, 1 if first else 0)
    return ActionResult(True, row={"schedule": name, "paused": True, "paused_at": added and added["paused_at"]})


async def resume(conn: Conn, name: str, *, role: str) -> ActionResult:
    """End the pause; the slots that came due while it stood and no tick decided are recorded as `paused`."""
    check_role(role)
    declared = registry.get(name)
    if declared is None:
        return _unknown(name)
    from crontick.schedules import slots

    async with action(conn, f"resume schedule {name}") as cur:
        await cur.execute(query("admin_schedule_lock"), {"name": name})
        stored = await cur.fetchone()
        params: dict[str, object] = {
            "name": name,
            "cursor_was": None,
            "cursor_to": None,
            "next_at": None,
            "first": None,
            "last": None,
            "count": 0,
            "lower": False,
        }
        same = stored is not None and (stored["cron"], stored["time_zone"]) == (declared.cron, declared.time_zone)
        if stored is not None and same and stored["evaluated_until"] <= stored["now"]:
            plan = slots.plan(
                declared.cron,
                declared.time_zone,
                declared.catch_up,
                stored["evaluated_until"],
                stored["now"],
                paused=True,
            )
            params.update(cursor_was=stored["evaluated_until"], cursor_to=stored["now"], next_at=plan.next_at)
            for k in plan.skipped:
                params.update(first=k.first, last=k.last, count=k.slot_count, lower=k.count_is_lower_bound)
        await cur.execute(query("admin_schedule_resume"), params)
        row = await cur.fetchone()
        assert row is not None
        resumed, skipped = int(row["resumed"]), int(row["skipped"])
        await record(cur, role, "resume_schedule", {"schedule": name, "skipped": skipped}, resumed)
    return ActionResult(True, row={"schedule": name, "paused": False, "skipped_slots": skipped})
