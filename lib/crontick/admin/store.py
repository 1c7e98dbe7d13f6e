"""The admin's reads and actions over PostgreSQL: short read-only transactions, keyset lists, audited writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from crontick.admin import actor, job_steps
from crontick.admin.tx import (
    ACTION_TIMEOUT,
    READ_TIMEOUT,
    Conn,
    Row,
    action,
    connection,
    decode_cursor,
    encode_cursor,
    read,
)
from crontick.db import query
from crontick.db.schema import Source
from crontick.errors import CrontickError
from crontick.jobs.queue import STATUSES

__all__ = [
    "ACTION_TIMEOUT",
    "READ_TIMEOUT",
    "ActionResult",
    "Conn",
    "Row",
    "action",
    "audit",
    "bulk_retry",
    "cancel_job",
    "connection",
    "decode_cursor",
    "delete_job",
    "due_reminders",
    "encode_cursor",
    "get_job",
    "list_jobs",
    "list_reminders",
    "list_ticks",
    "max_job_id",
    "read",
    "retry_job",
    "retry_reminder",
    "stats",
]

COUNT_CAP = 10_000
MAX_LIMIT = 500
# A payload search reads at most this many ids per request (admin_jobs_search).
SEARCH_WINDOW_IDS = 20_000
BULK_CHUNK = 500
DEFAULT_EXPECTED_INTERVAL_SECONDS = 900.0
_NO_CURSOR = 2**63 - 1  # "no cursor": below every id
RETRYABLE = ("done", "failed", "cancelled")
FINISHED = ("done", "failed", "cancelled")
ROLES = ("admin", "viewer", "cli")


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise CrontickError(f"limit: expected 1 to {MAX_LIMIT}, got: {limit}")
    return limit


def _status(status: str | None, allowed: tuple[str, ...] = STATUSES) -> str | None:
    if status is not None and status not in allowed:
        raise CrontickError(f"status: expected one of {', '.join(allowed)}, got: {status!r}")
    return status


# -- reads --------------------------------------------------------------------------------------


async def list_jobs(
    conn: Conn,
    *,
    status: str | None = None,
    type: str | None = None,
    payload_contains: dict[str, Any] | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> tuple[list[Row], str | None]:
    """Jobs newest first below `before_id`, and the cursor of the next page (None at the end).

    Without a payload filter a page reads at most `limit + 1` index entries. With one, at most
    SEARCH_WINDOW_IDS ids: a page may hold fewer rows than `limit` and still have a next cursor.
    """
    _limit(limit)
    _status(status)
    if payload_contains is not None and not isinstance(payload_contains, dict):
        raise CrontickError(f'payload: expected a JSON object such as {{"user_id": 42}}, got: {payload_contains!r}')
    async with read(conn, "jobs list") as cur:
        if payload_contains is not None:
            if before_id is None:
                await cur.execute(query("admin_jobs_next_id"))
                first = await cur.fetchone()
                before_id = int(next(iter(first.values()))) if first else 1  # max(id) + 1
            floor_id = max(before_id - SEARCH_WINDOW_IDS, 0)
            params = {
                "before_id": before_id,
                "floor_id": floor_id,
                "payload": Jsonb(payload_contains),
                "status": status,
                "type": type,
                "limit": limit + 1,
            }
            await cur.execute(query("admin_jobs_search"), params)
            rows = await cur.fetchall()
            if len(rows) > limit:
                return rows[:limit], encode_cursor(rows[limit - 1]["id"])
            return rows, (encode_cursor(floor_id) if floor_id > 1 else None)
        params = {
            "before_id": before_id or _NO_CURSOR,
            "limit": limit + 1,
            "status": status,
            "type": type,
            "statuses": list(STATUSES),
        }
        name = {
            (False, False): "admin_jobs",
            (True, False): "admin_jobs_by_status",
            (False, True): "admin_jobs_by_type",
            (True, True): "admin_jobs_by_type_status",
        }
        await cur.execute(query(name[status is not None, type is not None]), params)
        rows = await cur.fetchall()
    if len(rows) > limit:
        return rows[:limit], encode_cursor(rows[limit - 1]["id"])
    return rows, None


async def get_job(conn: Conn, job_id: int) -> Row | None:
    """One job, whole, with "history" (every attempt, oldest first), "steps" and "waiting_for" (crontick.admin.job_steps)."""
    async with read(conn, f"job {job_id}") as cur:
        await cur.execute(query("admin_job_get"), {"id": job_id})
        job = await cur.fetchone()
        if job is None:
            return None
        await cur.execute(query("admin_job_attempts"), {"id": job_id})
        job["history"] = await cur.fetchall()
        await job_steps.add_steps(cur, job)  # durable steps: "steps" and "waiting_for"
    return job


async def stats(conn: Conn, *, expected_interval_seconds: float = DEFAULT_EXPECTED_INTERVAL_SECONDS) -> Row:
    """Counts per status (each capped: COUNT_CAP + 1 means "more than COUNT_CAP"), the oldest due
    job's wait, the scheduler's last tick and staleness, and done/failed per hour for 24 h."""
    async with read(conn, "stats") as cur:
        await cur.execute(query("admin_stats_counts"), {"cap": COUNT_CAP + 1})
        counts = {r["status"]: int(r["n"]) for r in await cur.fetchall()}
        await cur.execute(query("admin_stats_health"))
        health = await cur.fetchone()
        await cur.execute(query("admin_stats_hourly"))
        hourly = await cur.fetchall()
    assert health is not None  # one row always
    last: datetime | None = health["last_tick_at"]
    as_of: datetime = health["as_of"]
    stale = last is None or (as_of - last).total_seconds() > 2 * expected_interval_seconds
    return {
        "jobs": counts,
        "capped": {s: n > COUNT_CAP for s, n in counts.items()},
        "oldest_due_seconds": health["oldest_due_seconds"],
        "last_tick_at": last,
        "stale": stale,
        "as_of": as_of,
        "hourly": [
            {"hour": h["hour"], "done": int(h["done"]), "failed": int(h["failed"]), "ticks": int(h["ticks"])}
            for h in hourly
        ],
    }


async def list_reminders(
    conn: Conn, *, status: str | None = None, before: int | None = None, limit: int = 50, source: Source | None = None
) -> tuple[list[Row], str | None]:
    """The reminder send log newest first (bookings from `source`), and the next page's cursor."""
    from crontick.reminders.send import STATUSES as REMINDER_STATUSES

    _limit(limit)
    _status(status, REMINDER_STATUSES)
    params = {"status": status, "before_id": before or _NO_CURSOR, "limit": limit + 1}
    async with read(conn, "reminders list") as cur:
        await cur.execute(query("admin_reminders_by_status" if status else "admin_reminders", source), params)
        rows = await cur.fetchall()
    if len(rows) > limit:
        return rows[:limit], encode_cursor(rows[limit - 1]["id"])
    return rows, None


async def due_reminders(conn: Conn, limit: int = 50, source: Source | None = None) -> list[Row]:
    """Confirmed bookings starting in the next 24 hours, soonest first, with their sends so far (from `source`)."""
    async with read(conn, "due reminders") as cur:
        await cur.execute(query("admin_reminders_due", source), {"limit": _limit(limit)})
        return await cur.fetchall()


async def list_ticks(
    conn: Conn,
    *,
    before_id: int | None = None,
    limit: int = 50,
    expected_interval_seconds: float = DEFAULT_EXPECTED_INTERVAL_SECONDS,
) -> tuple[list[Row], str | None]:
    """Ticks newest first, each with `gap_seconds` since the previous tick started and `gap_flagged`
    when that is over twice the expected interval (the scheduler missed a call)."""
    _limit(limit)
    async with read(conn, "ticks list") as cur:
        await cur.execute(query("admin_ticks"), {"before_id": before_id or _NO_CURSOR, "limit": limit + 1})
        rows = await cur.fetchall()
    for row, older in zip(rows, [*rows[1:], None], strict=False):  # no ticks yet: no pairs
        gap = (row["started_at"] - older["started_at"]).total_seconds() if older else None
        row["gap_seconds"] = gap
        row["gap_flagged"] = gap is not None and gap > 2 * expected_interval_seconds
    if len(rows) > limit:
        return rows[:limit], encode_cursor(rows[limit - 1]["id"])
    return rows, None


# -- actions ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActionResult:
    """What an action did. `error` is None on success, else not_found | conflict | key_taken."""

    ok: bool
    error: str | None = None
    detail: str = ""
    row: Row | None = field(default=None)


def _check_role(role: str) -> None:
    if role not in ROLES or role == "viewer":
        raise CrontickError(f"role: expected admin or cli to change jobs, got: {role!r}")


async def audit(
    conn: Conn | psycopg.AsyncCursor[Row], role: str | None, action: str, detail: dict[str, Any], rows: int
) -> None:
    """Record an admin action and who acted (crontick.admin.actor) inside the action's transaction."""
    params = {"role": role, "actor": actor.current(), "action": action, "detail": Jsonb(detail), "rows": rows}
    await conn.execute(query("admin_audit_insert"), params)


async def _locked_job(
    cur: psycopg.AsyncCursor[Row], job_id: int, allowed: tuple[str, ...], wanted: str, why: str
) -> Row | ActionResult:
    """Lock the job for an action; the refusal instead when it is unknown or not in `allowed`."""
    await cur.execute(query("admin_job_lock"), {"id": job_id})
    lock = await cur.fetchone()
    if lock is None:
        return ActionResult(False, "not_found", f"expected an existing job id, got: {job_id} (no such job)")
    if lock["status"] not in allowed:
        detail = f"expected {wanted}, got job {job_id} with status {lock['status']!r}: {why}"
        return ActionResult(False, "conflict", detail)
    return lock


async def retry_job(conn: Conn, job_id: int, *, role: str) -> ActionResult:
    """A finished job (done, failed or cancelled) runs again, keeping its attempts and history:
    max_attempts becomes at least attempts + 1. A job whose key another active job holds is
    not retried (key_taken); a pending or running one is a conflict."""
    _check_role(role)
    try:
        return await _retry_job(conn, job_id, role)
    except psycopg.errors.UniqueViolation as exc:  # a job with its key came in after the lock was read
        held = "debounce key" if exc.diag.constraint_name == "jobs_debounce_open" else "key"
        detail = f"expected job {job_id}'s {held} to be free, got it taken by a job enqueued just now"
        return ActionResult(False, "key_taken", detail + ": wait for that job to finish, or cancel it, then retry")


async def _retry_job(conn: Conn, job_id: int, role: str) -> ActionResult:
    async with action(conn, f"retry job {job_id}") as cur:
        lock = await _locked_job(
            cur, job_id, RETRYABLE, "a failed, done or cancelled job", "it will run (or is running) without a retry"
        )
        if isinstance(lock, ActionResult):
            return lock
        holder, held = (lock["key_holder"], "key") if lock["key_holder"] else (lock["debounce_holder"], "debounce key")
        if holder is not None:
            return ActionResult(
                False,
                "key_taken",
                f"expected job {job_id}'s {held} to be free, got it held by active "
                f"job {holder}: wait for that job to finish, or cancel it, then retry",
            )
        await cur.execute(query("admin_job_retry"), {"id": job_id})
        row = await cur.fetchone()
        await audit(cur, role, "retry_job", {"job_id": job_id}, 1)
    return ActionResult(True, row=row)


async def cancel_job(conn: Conn, job_id: int, *, role: str) -> ActionResult:
    """A pending or waiting job becomes cancelled and never runs; any other status is a conflict."""
    _check_role(role)
    async with action(conn, f"cancel job {job_id}") as cur:
        lock = await _locked_job(
            cur, job_id, job_steps.CANCELLABLE, "a pending or waiting job", "only a job not yet run can be cancelled"
        )
        if isinstance(lock, ActionResult):
            return lock
        await cur.execute(query("admin_job_cancel"), {"id": job_id})
        row = await cur.fetchone()
        await audit(cur, role, "cancel_job", {"job_id": job_id}, 1)
    return ActionResult(True, row=row)


async def delete_job(conn: Conn, job_id: int, *, role: str) -> ActionResult:
    """A finished job (done, failed or cancelled) and its attempts are deleted."""
    _check_role(role)
    async with action(conn, f"delete job {job_id}") as cur:
        lock = await _locked_job(cur, job_id, FINISHED, "a finished job", "cancel it first if it is pending")
        if isinstance(lock, ActionResult):
            return lock
        await cur.execute(query("admin_job_delete"), {"id": job_id})
        await audit(cur, role, "delete_job", {"job_id": job_id}, 1)
    return ActionResult(True, row={"id": job_id, "deleted": True})


async def bulk_retry(
    conn: Conn,
    *,
    status: str,
    type: str | None = None,
    payload_contains: dict[str, Any] | None = None,
    max_id: int,
    after_id: int | None = None,
    chunk: int = BULK_CHUNK,
    role: str = "admin",
) -> tuple[int, int, int | None]:
    """Retry the next chunk of jobs a frozen filter matches (ids in (after_id, max_id]).

    Returns (retried, skipped because their key is taken, the after_id of the next chunk or
    None when done). Call it again with that after_id until None: each call is one short
    transaction, so 20,000 jobs never time out a function.
    """
    _check_role(role)
    _status(status, RETRYABLE)
    if not 1 <= chunk <= BULK_CHUNK:
        raise CrontickError(f"chunk: expected 1 to {BULK_CHUNK}, got: {chunk}")
    params = {
        "status": status,
        "type": type,
        "payload": Jsonb(payload_contains) if payload_contains is not None else None,
        "max_id": max_id,
        "after_id": after_id or 0,
        "chunk": chunk,
    }
    filt = {"status": status, "type": type, "payload": payload_contains, "max_id": max_id, "after_id": after_id}
    async with action(conn, "bulk retry") as cur:
        await cur.execute(query("admin_jobs_bulk_retry"), params)
        row = await cur.fetchone()
        assert row is not None
        retried, chosen, last_id = int(row["retried"]), int(row["chosen"]), row["last_id"]
        await audit(cur, role, "bulk_retry", {**filt, "skipped": chosen - retried}, retried)
    return retried, chosen - retried, (last_id if int(row["picked"]) == chunk else None)


async def retry_reminder(conn: Conn, booking_id: str, kind: str, *, role: str = "admin") -> ActionResult:
    """A failed or unknown reminder is due again now, with one more attempt (after a person has
    checked with the provider that it did not go out)."""
    _check_role(role)
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
        await audit(cur, role, "retry_reminder", params, 1)
    return ActionResult(True, row=row)


async def max_job_id(conn: Conn) -> int:
    """The highest job id now: a bulk action freezes its filter at this id when it is confirmed."""
    async with read(conn, "max job id") as cur:
        await cur.execute(query("admin_jobs_next_id"))
        row = await cur.fetchone()
    return int(next(iter(row.values()))) - 1 if row else 0
