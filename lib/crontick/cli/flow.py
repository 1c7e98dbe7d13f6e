"""The CLI's flow-control commands: `crontick pause|resume type|group|rate-limit NAME`, `crontick groups`, `crontick rate-limits`."""

from __future__ import annotations

import argparse
from typing import Any

from crontick.admin.flow import store
from crontick.cli.admin import _json, _run, kick
from crontick.errors import CrontickError

KINDS = {"type": "type", "group": "group", "rate-limit": "rate_limit"}


def add_parsers(sub: Any) -> None:
    """Register pause, resume, groups and rate-limits on the `crontick` subparsers."""
    for verb, doc in (
        ("pause", "hold back a job type, a group or a rate limit: its pending jobs stay pending, none is claimed"),
        ("resume", "let a paused job type, group or rate limit's jobs be claimed again"),
    ):
        p = sub.add_parser(verb, help=doc)
        p.add_argument("kind", choices=sorted(KINDS))
        p.add_argument("name")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=cmd_toggle, pausing=verb == "pause")
    g = sub.add_parser("groups", help="groups with jobs that have not ended: each head and why the group waits")
    g.add_argument("--cursor", help="the next_cursor printed by the previous page")
    g.add_argument("--limit", type=int, default=store.GROUPS_PAGE)
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=cmd_groups)
    r = sub.add_parser("rate-limits", help="each rate limit this process declares: its use and when it reopens")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_rate_limits)


def cmd_toggle(args: argparse.Namespace) -> int:
    act = store.pause if args.pausing else store.resume
    result = _run(args, lambda conn: act(conn, KINDS[args.kind], args.name, role="cli"))
    if result.ok and not args.pausing:  # a resumed pause's jobs are due now: start a tick, as the admin's Resume does
        kick(args)
    if args.json:
        print(_json(result.row if result.ok else {"error": result.error, "detail": result.detail}))
        return 0 if result.ok else 1
    if not result.ok:
        raise CrontickError(f"{args.command}: {result.detail}")
    print(f"{args.kind} {args.name} is {'paused' if args.pausing else 'running again'}")
    return 0


def cmd_groups(args: argparse.Namespace) -> int:
    rows, cursor = _run(args, lambda conn: store.groups(conn, after=args.cursor, limit=args.limit))
    if args.json:
        print(_json({"groups": rows, "next_cursor": cursor}))
        return 0
    print(f"{'group':<32} {'reason':<14} {'running':>7} {'waiting':>7}  head")
    for g in rows:
        head = g["head"]
        print(
            f"{g['group_key'][:32]:<32} {g['reason']:<14} {g['running']:>7} {g['waiting']:>7}  "
            f"{head['id']} {head['type']} {head['status']} {head['attempts']}/{head['max_attempts']}"
        )
    if cursor:
        print(f"more: crontick groups --cursor {cursor}")
    return 0


def cmd_rate_limits(args: argparse.Namespace) -> int:
    rows = _run(args, store.rate_limits)
    if args.json:
        print(_json({"rate_limits": rows}))
        return 0
    for r in rows:
        state = "paused" if r["paused"] else f"reopens {r['reopens_at']}" if r["exhausted"] else "open"
        print(f"{r['name']:<24} {r['used']:>6}/{r['count']:<6} per {r['per_seconds']:g} s  {state}")
    return 0
