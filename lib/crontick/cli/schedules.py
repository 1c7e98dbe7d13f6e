"""`crontick schedules`: list the declared schedules with their last and next slot, print their slots in a
window, or enqueue one now, pause or resume one."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from crontick.errors import CrontickError
from crontick.schedules import registry
from crontick.schedules.listing import local_time, window


def add_parser(sub: Any, func: Any) -> None:
    s = sub.add_parser(
        "schedules",
        help="list schedules with their last and next slot or their slots in a window; enqueue, pause or resume one",
    )
    s.add_argument("--from", dest="start", type=window_bound, help="window start, ISO-8601 (no offset: UTC), exclusive")
    s.add_argument("--until", dest="until", type=window_bound, help="window end, ISO-8601 (no offset: UTC), inclusive")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=func, action=None)
    acts = s.add_subparsers(dest="action", metavar="{enqueue,pause,resume}")
    for name, what in ACTIONS.items():
        a = acts.add_parser(name, help=what)
        a.add_argument("name", help="the schedule's name, as declared with crontick.schedule(...)")
        a.add_argument("--json", action="store_true", help="print JSON")


ACTIONS = {
    "enqueue": "enqueue one job of the schedule now, outside its slots (a manual run: it takes no slot)",
    "pause": "pause the schedule: its slots are recorded as skipped (paused) and nothing is enqueued",
    "resume": "resume the schedule; the slots that came due while paused stay skipped (paused)",
}


def run_action(args: argparse.Namespace, database_url: str) -> int:
    """`crontick schedules enqueue|pause|resume NAME`: the admin's action, audited with the role `cli`."""
    from crontick import db
    from crontick.admin.schedules import store

    act = {
        "enqueue": store.enqueue_now,
        "pause": store.pause,
        "resume": store.resume,
    }[args.action]

    async def go() -> Any:
        conn = await db.connect(database_url)
        try:
            return await act(conn, args.name, role="cli")
        finally:
            await conn.close()

    result = asyncio.run(go())
    if args.json:
        print(json.dumps(result.row if result.ok else {"error": result.error, "detail": result.detail}, default=str))
        return 0 if result.ok else 1
    if not result.ok:
        raise CrontickError(f"schedules {args.action}: {result.detail}")
    row = result.row or {}
    done = {
        "enqueue": f"enqueued job {row.get('job_id')} for schedule {args.name!r} (outside its slots)",
        "pause": f"schedule {args.name!r} is paused: its slots are recorded as skipped (paused)",
        "resume": f"schedule {args.name!r} is resumed ({row.get('skipped_slots', 0)} slot(s) missed while paused)",
    }[args.action]
    print(done)
    return 0


def window_bound(text: str) -> datetime:
    """An ISO-8601 date or time; one without an offset is read as UTC."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO-8601 time such as 2026-03-28T00:00Z or a date such as 2026-03-28, got: {text!r}"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def print_window(args: argparse.Namespace) -> None:
    found = window(args.start, args.until)
    if args.json:
        print(json.dumps(found))
        return
    for s in registry.declared():
        n = len(found[s.name])
        print(f"{s.name}  {s.cron}  {s.time_zone}  ({n} slot{'s' * (n != 1)})")
        for text in found[s.name]:
            print(f"  {text}  {local_time(datetime.fromisoformat(text), s.time_zone)}")


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
