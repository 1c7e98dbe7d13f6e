"""The CLI's admin commands (`crontick jobs`, `retry`, `cancel`, `run-now`, `stats`): the admin store, as a table or JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from crontick import db
from crontick.admin import tx
from crontick.admin.jobs import store
from crontick.errors import CrontickError
from crontick.jobs.queue import STATUSES
from crontick.settings import Settings

T = TypeVar("T")


def add_parsers(sub: Any) -> None:
    """Register jobs, retry, cancel, run-now and stats on the `crontick` subparsers."""
    j = sub.add_parser("jobs", help="list jobs, newest first")
    j.add_argument("--status", choices=STATUSES)
    j.add_argument("--type", help="only jobs of this type")
    j.add_argument("--payload", help="only jobs whose payload contains this JSON, e.g. '{\"user_id\": 42}'")
    j.add_argument("--limit", type=int, default=50)
    j.add_argument("--cursor", help="the next_cursor printed by the previous page")
    j.add_argument("--json", action="store_true", help="print JSON for scripts")
    j.set_defaults(func=cmd_jobs)

    r = sub.add_parser("retry", help="run a failed (or done, or cancelled) job again, keeping its attempts and history")
    r.add_argument("job_id", type=int)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_retry)

    c = sub.add_parser("cancel", help="cancel a pending, sleeping or waiting job, or ask a running one to stop")
    c.add_argument("job_id", type=int)
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_cancel)

    n = sub.add_parser("run-now", help="make a pending job due now (its attempts are untouched)")
    n.add_argument("job_id", type=int)
    n.add_argument("--json", action="store_true")
    n.set_defaults(func=cmd_run_now)

    s = sub.add_parser("stats", help="jobs per status (capped at 10,000), oldest due job, last tick")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_stats)


def _run(args: argparse.Namespace, work: Callable[[tx.Conn], Awaitable[T]]) -> T:
    """`work` on a connection to the database of the command's environment (`args.env`: Django passes its own)."""
    url = Settings.from_env(args.env).require_database_url()

    async def go() -> T:
        conn = await db.connect(url)
        try:
            return await work(conn)
        finally:
            await conn.close()

    return asyncio.run(go())


def _json(value: Any) -> str:
    return json.dumps(value, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v))


def cmd_jobs(args: argparse.Namespace) -> int:
    payload = None
    if args.payload is not None:
        try:
            payload = json.loads(args.payload)
        except json.JSONDecodeError as exc:
            raise CrontickError(
                f"--payload: expected a JSON object such as '{{\"user_id\": 42}}', got: {args.payload!r} ({exc.msg})"
            ) from None
    before = tx.decode_cursor(args.cursor)
    rows, cursor = _run(
        args,
        lambda conn: store.list_jobs(
            conn, status=args.status, type=args.type, payload_contains=payload, before_id=before, limit=args.limit
        ),
    )
    if args.json:
        print(_json({"jobs": rows, "next_cursor": cursor}))
        return 0
    print(f"{'id':>8}  {'type':<24} {'status':<9} {'tries':>5}  {'run_after':<25} last_error")
    for r in rows:
        err = (r["last_error"] or "").replace("\n", " ")[:80]
        tries = f"{r['attempts']:>2}/{r['max_attempts']:<2}"
        print(
            f"{r['id']:>8}  {r['type']:<24} {r['status']:<9} {tries}  {r['run_after'].isoformat(timespec='seconds'):<25} {err}"
        )
    if cursor:
        print(f"more: crontick jobs --cursor {cursor}")
    return 0


def kick(args: argparse.Namespace) -> None:
    """After an action that made work due now has committed (retry, run-now, resume): start a tick as
    `crontick.kick()` does (crontick.hooks.kick.after_commit), so the work does not wait for the scheduler.

    `CRONTICK_KICK=http` calls the app's own tick URL; `off` with a waker set books a wake-up for now; `inline` runs
    the tick in this process, but only with CRONTICK_HANDLERS set (as `crontick tick` needs it): without the app's
    handlers this process would put back each job it claimed, and fail one older than the unknown type's grace, so
    then it starts nothing (logged as `kick_skipped`). Never fails the command: a failed kick is logged."""
    from crontick import logs
    from crontick.hooks.kick import after_commit
    from crontick.runtime import Runtime

    logs.setup()  # the kick's lines (and an inline tick's) as JSON on stderr, as an app writes them
    settings = Settings.from_env(args.env)
    if settings.kick == "inline" and not settings.handler_modules:
        logs.info(
            "kick_skipped", reason="CRONTICK_KICK=inline without CRONTICK_HANDLERS: this process knows no handler"
        )
        return

    async def go() -> None:
        rt = Runtime(settings)
        try:
            await after_commit(rt)  # nothing when rt is misconfigured (no database): it was logged
        finally:
            await rt.close()

    asyncio.run(go())


def _act(
    args: argparse.Namespace, act: Callable[..., Awaitable[tx.ActionResult]], done: str, *, kicks: bool = False
) -> int:
    """`act` on job `args.job_id`, printed; `kicks`: the job is due now once it succeeded, so start a tick (kick)."""
    result = _run(args, lambda conn: act(conn, args.job_id, role="cli"))
    if result.ok and kicks:
        kick(args)
    if args.json:
        body = result.row if result.ok else {"error": result.error, "detail": result.detail}
        print(_json(body))
        return 0 if result.ok else 1
    if not result.ok:
        raise CrontickError(f"{args.command}: {result.detail}")
    row = result.row or {}
    print(f"job {args.job_id} is {done} (attempts {row.get('attempts')} of {row.get('max_attempts')})")
    return 0


def cmd_retry(args: argparse.Namespace) -> int:
    return _act(args, store.retry_job, "pending again", kicks=True)


def cmd_cancel(args: argparse.Namespace) -> int:
    return _act(args, store.cancel_job, "cancelled")


def cmd_run_now(args: argparse.Namespace) -> int:
    return _act(args, store.run_now_job, "due now", kicks=True)


def cmd_stats(args: argparse.Namespace) -> int:
    from crontick.admin.overview import store

    stats = _run(args, store.stats)
    if args.json:
        print(_json(stats))
        return 0
    for status, n in stats["jobs"].items():
        shown = f"{store.COUNT_CAP:,}+" if stats["capped"][status] else f"{n:,}"
        print(f"{status:<10} {shown:>8}")
    due = stats["oldest_due_seconds"]
    last = stats["last_tick_at"]
    print(f"oldest due job waiting: {'none' if due is None else f'{due:.0f} s'}")
    print(f"last tick: {last.isoformat(timespec='seconds') if last else 'never'}{' (stale)' if stats['stale'] else ''}")
    return 0
