"""`crontick schedules`: list the declared schedules with their last and next slot, or print their slots in a window."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from . import db, schedules, slots
from .errors import CrontickError

RECENT_PER_SCHEDULE = 3


def add_parser(sub: Any, func: Any) -> None:
    s = sub.add_parser("schedules", help="list schedules with their last and next slot, or their slots in a window")
    s.add_argument("--from", dest="start", type=window_bound, help="window start, ISO-8601 (no offset: UTC), exclusive")
    s.add_argument("--until", dest="until", type=window_bound, help="window end, ISO-8601 (no offset: UTC), inclusive")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=func)


def window_bound(text: str) -> datetime:
    """An ISO-8601 date or time; one without an offset is read as UTC."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO-8601 time such as 2026-03-28T00:00Z or a date such as 2026-03-28, got: {text!r}"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def window(start: datetime | None, until: datetime | None) -> dict[str, list[str]]:
    """{name: [UTC slots in (start, until]]} for each declared schedule; touches no database."""
    if start is None or until is None:
        raise CrontickError("schedules: expected both --from and --until for a window, got only one")
    if until <= start:
        raise CrontickError(
            f"schedules: expected --until after --from, got {slots.iso_z(start)} .. {slots.iso_z(until)}"
        )
    out: dict[str, list[str]] = {}
    for s in schedules.declared():
        try:
            found = slots.slots_between(s.cron, s.time_zone, start, until)
        except ValueError as exc:
            raise CrontickError(f"schedules: {s.name!r}: {exc}") from None
        out[s.name] = [slots.iso_z(at) for at in found]
    return out


def print_window(args: argparse.Namespace) -> None:
    found = window(args.start, args.until)
    if args.json:
        print(json.dumps(found))
        return
    for s in schedules.declared():
        n = len(found[s.name])
        print(f"{s.name}  {s.cron}  {s.time_zone}  ({n} slot{'s' * (n != 1)})")
        for text in found[s.name]:
            print(f"  {text}  {_local(datetime.fromisoformat(text), s.time_zone)}")


def listing(conn: psycopg.Connection[Any] | None, now: datetime) -> list[dict[str, Any]]:
    """Each declared schedule with its stored state (given a connection) and next slot."""
    stored: list[dict[str, Any]] = []
    recent: list[dict[str, Any]] = []
    if conn is not None:
        cur = conn.cursor(row_factory=dict_row)
        try:
            stored = cur.execute(db.query("schedule_list")).fetchall()
            recent = cur.execute(db.query("schedule_recent_slots"), {"per_schedule": RECENT_PER_SCHEDULE}).fetchall()
        except psycopg.errors.UndefinedTable as exc:
            raise CrontickError(
                "schedules: the schedule tables are missing: run `crontick migrate` against DATABASE_URL"
            ) from exc
    return build_listing(stored, recent, now)


def build_listing(
    stored_rows: list[dict[str, Any]], recent_rows: list[dict[str, Any]], now: datetime
) -> list[dict[str, Any]]:
    """The listing from the rows of schedule_list and schedule_recent_slots (the admin page reads them async)."""
    stored = {r["name"]: r for r in stored_rows}
    recent: dict[str, list[dict[str, Any]]] = {}
    for r in recent_rows:
        recent.setdefault(r["name"], []).append({k: v for k, v in r.items() if k != "name"})
    out = []
    for s in schedules.declared():
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
                "last_slot_local": last and _local(last, s.time_zone),
                "next_slot": next_at and slots.iso_z(next_at),
                "next_slot_local": next_at and _local(next_at, s.time_zone),
                "due": bool(next_at and next_at <= now),
                "seen_by_a_tick": row is not None,
                "changed_at": row and row["changed_at"] and slots.iso_z(row["changed_at"]),
                "previous_cron": row and row["previous_cron"],
                "recent": [_decision(d) for d in recent.get(s.name, [])],
            }
        )
    return out


def print_listing(items: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(items))
        return
    if not items:
        print("no schedules declared (declare them with crontick.schedule(...) in a module named in CRONTICK_HANDLERS)")
    for i in items:
        print(f"{i['name']}  {i['cron']!r}  {i['time_zone']}  catch_up={i['catch_up']}  job={i['job_type']}")
        print(f"  last: {i['last_slot'] or '-':<21} {i['last_slot_local'] or ''}".rstrip())
        due = "  (due: the next tick enqueues it)" if i["due"] else ""
        print(f"  next: {i['next_slot'] or 'never':<21} {i['next_slot_local'] or ''}{due}")
        if i["changed_at"]:
            print(f"  changed at {i['changed_at']} (was {i['previous_cron']!r})")
        for d in i["recent"]:
            span = d["slot"] if d["slot_count"] == 1 else f"{d['slot']} .. {d['last_slot']}"
            n = d["slot_count"]
            what = (
                f"job {d['job_id']}"
                if d["outcome"] == "enqueued"
                else (f"{n}{'+' * d['count_is_lower_bound']} slot{'s' * (n != 1)}")
            )
            print(f"    {d['outcome']:<12} {span}  {what}")


def _decision(d: dict[str, Any]) -> dict[str, Any]:
    return {**d, "slot": slots.iso_z(d["slot"]), "last_slot": slots.iso_z(d["last_slot"])}


def _local(at: datetime, time_zone: str) -> str:
    return at.astimezone(slots.zone(time_zone)).strftime("%Y-%m-%d %H:%M %Z")
