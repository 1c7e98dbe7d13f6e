"""What `crontick schedules` and the admin's schedules page show: each schedule's last and next slot, or its slots in a window."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from crontick import db
from crontick.errors import CrontickError
from crontick.schedules import registry, slots

RECENT_PER_SCHEDULE = 3


def window(start: datetime | None, until: datetime | None) -> dict[str, list[str]]:
    """{name: [UTC slots in (start, until]]} for each declared schedule; touches no database."""
    if start is None or until is None:
        raise CrontickError("schedules: expected both --from and --until for a window, got only one")
    if until <= start:
        raise CrontickError(
            f"schedules: expected --until after --from, got {slots.iso_z(start)} .. {slots.iso_z(until)}"
        )
    out: dict[str, list[str]] = {}
    for s in registry.declared():
        try:
            found = slots.slots_between(s.cron, s.time_zone, start, until)
        except ValueError as exc:
            raise CrontickError(f"schedules: {s.name!r}: {exc}") from None
        out[s.name] = [slots.iso_z(at) for at in found]
    return out


def listing(conn: psycopg.Connection[Any] | None, now: datetime) -> list[dict[str, Any]]:
    """Each declared schedule with its stored state (given a connection) and next slot."""
    stored: list[dict[str, Any]] = []
    recent: list[dict[str, Any]] = []
    pauses: list[dict[str, Any]] = []
    if conn is not None:
        cur = conn.cursor(row_factory=dict_row)
        try:
            stored = cur.execute(db.query("schedule_list")).fetchall()
            recent = cur.execute(db.query("schedule_recent_slots"), {"per_schedule": RECENT_PER_SCHEDULE}).fetchall()
            pauses = cur.execute(db.query("schedule_pauses")).fetchall()
        except psycopg.errors.UndefinedTable as exc:
            raise CrontickError(
                "schedules: the schedule tables are missing: run `crontick migrate` against DATABASE_URL"
            ) from exc
    return build_listing(stored, recent, now, pauses)


def build_listing(
    stored_rows: list[dict[str, Any]],
    recent_rows: list[dict[str, Any]],
    now: datetime,
    pause_rows: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The listing from the rows of schedule_list, schedule_recent_slots and schedule_pauses (the admin
    page reads them async)."""
    stored = {r["name"]: r for r in stored_rows}
    paused = {r["name"]: r["paused_at"] for r in pause_rows or []}
    recent: dict[str, list[dict[str, Any]]] = {}
    for r in recent_rows:
        recent.setdefault(r["name"], []).append({k: v for k, v in r.items() if k != "name"})
    out = []
    for s in registry.declared():
        row = stored.get(s.name)
        same = row is not None and (row["cron"], row["time_zone"]) == (s.cron, s.time_zone)
        next_at = row["next_at"] if same and row and row["next_at"] else slots.next_slot(s.cron, s.time_zone, now)
        last = row["last_slot"] if row else None
        out.append(
            {
                "name": s.name,
                "cron": s.cron,
                "time_zone": s.time_zone,
                "catch_up": s.catch_up,
                "job_type": s.job_type,
                "last_slot": last and slots.iso_z(last),
                "last_slot_local": last and local_time(last, s.time_zone),
                "next_slot": next_at and slots.iso_z(next_at),
                "next_slot_local": next_at and local_time(next_at, s.time_zone),
                "due": bool(next_at and next_at <= now),
                "seen_by_a_tick": row is not None,
                "changed_at": row and row["changed_at"] and slots.iso_z(row["changed_at"]),
                "previous_cron": row and row["previous_cron"],
                "paused": s.name in paused,
                "paused_at": paused.get(s.name) and slots.iso_z(paused[s.name]),
                "manual_job_id": row and row.get("manual_job_id"),
                "manual_at": row and row.get("manual_at") and slots.iso_z(row["manual_at"]),
                "recent": [_decision(d) for d in recent.get(s.name, [])],
            }
        )
    return out


def _decision(d: dict[str, Any]) -> dict[str, Any]:
    return {**d, "slot": slots.iso_z(d["slot"]), "last_slot": slots.iso_z(d["last_slot"])}


def local_time(at: datetime, time_zone: str) -> str:
    return at.astimezone(slots.zone(time_zone)).strftime("%Y-%m-%d %H:%M %Z")
