"""The jobs' reads and actions over PostgreSQL: keyset lists, one job whole, and audited retry, cancel, delete,
run now and their bulk forms over a frozen filter."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from crontick.admin.audit.store import record
from crontick.admin.jobs import BULK_CHUNK, SEARCH_WINDOW_IDS, steps
from crontick.admin.tx import (
    NO_CURSOR,
    ActionResult,
    Conn,
    Row,
    action,
    check_limit,
    check_role,
    encode_cursor,
    keyset_page,
    read,
)
from crontick.db import query
from crontick.errors import CrontickError
from crontick.jobs.queue import STATUSES

RETRYABLE = ("done", "failed", "cancelled")
FINISHED = ("done", "failed", "cancelled")


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
    check_limit(limit)
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
            "before_id": before_id or NO_CURSOR,
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
    return keyset_page(rows, limit)


async def get_job(conn: Conn, job_id: int) -> Row | None:
    """One job, whole, with "history" (every attempt, oldest first), "steps" and "waiting_for" (crontick.admin.jobs.steps)."""
    async with read(conn, f"job {job_id}") as cur:
        await cur.execute(query("admin_job_get"), {"id": job_id})
        job = await cur.fetchone()
        if job is None:
            return None
        await cur.execute(query("admin_job_attempts"), {"id": job_id})
        job["history"] = await cur.fetchall()
        await steps.add_steps(cur, job)  # durable steps: "steps" and "waiting_for"
    return job


# -- actions ------------------------------------------------------------------------------------


async def locked_job(
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
    check_role(role)
    try:
        return await _retry_job(conn, job_id, role)
    except psycopg.errors.UniqueViolation as exc:  # a job with its key came in after the lock was read
        held = "debounce key" if exc.diag.constraint_name == "jobs_debounce_open" else "key"
        detail = f"expected job {job_id}'s {held} to be free, got it taken by a job enqueued just now"
        return ActionResult(False, "key_taken", detail + ": wait for that job to finish, or cancel it, then retry")


async def _retry_job(conn: Conn, job_id: int, role: str) -> ActionResult:
    async with action(conn, f"retry job {job_id}") as cur:
        lock = await locked_job(
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
        await record(cur, role, "retry_job", {"job_id": job_id}, 1)
    return ActionResult(True, row=row)


async def cancel_job(conn: Conn, job_id: int, *, role: str) -> ActionResult:
    """crontick.cancel, audited: a pending (sleeping) or waiting job becomes cancelled and never runs; a running one
    is asked to stop (cancel_requested_at) and ends cancelled at its next step; its unended children go with it.
    A job that has ended is a conflict."""
    check_role(role)
    async with action(conn, f"cancel job {job_id}") as cur:
        lock = await locked_job(
            cur, job_id, steps.CANCELLABLE, "a pending, sleeping, waiting or running job", "it has ended already"
        )
        if isinstance(lock, ActionResult):
            return lock
        await cur.execute(query("admin_job_cancel"), {"id": job_id})
        await cur.execute(query("admin_job_cancelled"), {"id": job_id})
        row = await cur.fetchone()
        await record(cur, role, "cancel_job", {"job_id": job_id}, 1)
    return ActionResult(True, row=row)


async def delete_job(conn: Conn, job_id: int, *, role: str) -> ActionResult:
    """A finished job (done, failed or cancelled) and its attempts are deleted."""
    check_role(role)
    async with action(conn, f"delete job {job_id}") as cur:
        lock = await locked_job(cur, job_id, FINISHED, "a finished job", "cancel it first if it is pending")
        if isinstance(lock, ActionResult):
            return lock
        await cur.execute(query("admin_job_delete"), {"id": job_id})
        await record(cur, role, "delete_job", {"job_id": job_id}, 1)
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
    check_role(role)
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
        await record(cur, role, "bulk_retry", {**filt, "skipped": chosen - retried}, retried)
    return retried, chosen - retried, (last_id if int(row["picked"]) == chunk else None)


async def max_job_id(conn: Conn) -> int:
    """The highest job id now: a bulk action freezes its filter at this id when it is confirmed."""
    async with read(conn, "max job id") as cur:
        await cur.execute(query("admin_jobs_next_id"))
        row = await cur.fetchone()
    return int(next(iter(row.values()))) - 1 if row else 0


async def attempt_ticks(conn: Conn, history: list[Row]) -> None:
    """Add to each attempt of a job's history the tick that recorded it (`tick`: id, source, execution id)."""
    finished: list[datetime] = [h["finished_at"] for h in history if h.get("finished_at") is not None]
    if not finished:
        return
    async with read(conn, "attempt ticks") as cur:
        await cur.execute(query("admin_job_ticks"), {"finished": finished})
        found = {r["finished_at"]: r for r in await cur.fetchall()}
    for h in history:
        t = found.get(h.get("finished_at"))
        h["tick"] = (
            {"id": t["tick_id"], "source": t["source"], "execution_id": t["execution_id"]} if t is not None else None
        )


async def run_now_job(conn: Conn, job_id: int, *, role: str) -> ActionResult:
    """A pending job is due now (run_after moves to now); attempts, history and max_attempts stay as
    they are. Any other status is a conflict."""
    check_role(role)
    async with action(conn, f"run job {job_id} now") as cur:
        lock = await locked_job(
            cur, job_id, ("pending",), "a pending job", "only a job that waits for its turn can be run now"
        )
        if isinstance(lock, ActionResult):
            return lock
        await cur.execute(query("admin_job_run_now"), {"id": job_id})
        row = await cur.fetchone()
        await record(cur, role, "run_now", {"job_id": job_id}, 1)
    return ActionResult(True, row=row)


async def bulk_run_now(
    conn: Conn,
    *,
    type: str | None = None,
    payload_contains: dict[str, Any] | None = None,
    max_id: int,
    after_id: int | None = None,
    chunk: int = BULK_CHUNK,
    role: str = "admin",
) -> tuple[int, int | None]:
    """Make due now the next chunk of scheduled (pending, due later) jobs a frozen filter matches (ids in
    (after_id, max_id]). Returns (moved, the after_id of the next chunk or None when done): call it
    again with that after_id until None, each call one short transaction, as bulk retry does."""
    check_role(role)
    if not 1 <= chunk <= BULK_CHUNK:
        raise CrontickError(f"chunk: expected 1 to {BULK_CHUNK}, got: {chunk}")
    params = {
        "type": type,
        "payload": Jsonb(payload_contains) if payload_contains is not None else None,
        "max_id": max_id,
        "after_id": after_id or 0,
        "chunk": chunk,
    }
    filt = {"status": "scheduled", "type": type, "payload": payload_contains, "max_id": max_id, "after_id": after_id}
    async with action(conn, "bulk run now") as cur:
        await cur.execute(query("admin_jobs_bulk_run_now"), params)
        row = await cur.fetchone()
        assert row is not None
        moved, picked, last_id = int(row["moved"]), int(row["picked"]), row["last_id"]
        await record(cur, role, "bulk_run_now", filt, moved)
    return moved, (last_id if picked == chunk else None)


async def signal_job(conn: Conn, job_id: int, *, payload: Any = None, role: str) -> ActionResult:
    """Wake a waiting job by hand, as crontick.signal would: it is pending again, due now, and its job.wait_for
    returns `payload`; any other status is a conflict. Audited like every action."""
    check_role(role)
    async with action(conn, f"signal job {job_id}") as cur:
        lock = await locked_job(
            cur, job_id, ("waiting",), "a waiting job", "only a job parked in job.wait_for can be signalled"
        )
        if isinstance(lock, ActionResult):
            return lock
        await cur.execute(query("admin_job_signal"), {"id": job_id, "payload": Jsonb(payload)})
        row = await cur.fetchone()
        if row is not None:
            row.pop("woken_steps", None)
        await record(cur, role, "signal_job", {"job_id": job_id}, 1)
    return ActionResult(True, row=row)
