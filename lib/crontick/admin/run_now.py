"""Pending jobs split into due and scheduled, "Run now" (one job or a frozen filter's chunks), the failed
jobs' error search and the tick of each attempt: the admin's reads and actions on when jobs run."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from crontick.admin.store import ActionResult, _check_role, _limit, _locked_job, audit
from crontick.admin.tx import NO_CURSOR, Conn, Row, action, encode_cursor, read
from crontick.db import query
from crontick.errors import CrontickError

# The pending statuses' halves: due (run_after has come) and scheduled (due later).
PENDING_SPLIT = ("due", "scheduled")
BULK_CHUNK = 500
# An error search reads at most this many failed jobs (the newest below its cursor) per page.
ERROR_WINDOW_JOBS = 5_000
ERROR_TEXT_MAX_CHARS = 200


async def list_pending(
    conn: Conn, *, split: str, type: str | None = None, before_id: int | None = None, limit: int = 50
) -> tuple[list[Row], str | None]:
    """Pending jobs that are due (`split="due"`) or due later (`"scheduled"`), newest first, keyset by id."""
    _limit(limit)
    if split not in PENDING_SPLIT:
        raise CrontickError(f"status: expected one of {', '.join(PENDING_SPLIT)}, got: {split!r}")
    name = f"admin_jobs_{split}" + ("_by_type" if type is not None else "")
    async with read(conn, f"{split} jobs") as cur:
        await cur.execute(query(name), {"before_id": before_id or NO_CURSOR, "limit": limit + 1, "type": type})
        rows = await cur.fetchall()
    if len(rows) > limit:
        return rows[:limit], encode_cursor(rows[limit - 1]["id"])
    return rows, None


async def search_errors(
    conn: Conn, text: str, *, type: str | None = None, before_id: int | None = None, limit: int = 50
) -> tuple[list[Row], str | None]:
    """Failed jobs whose last_error contains `text` (case ignored), newest first.

    Bounded: a page reads at most ERROR_WINDOW_JOBS failed jobs below its cursor, so a page may
    hold fewer than `limit` rows and still have a next cursor, where the search goes on below.
    """
    _limit(limit)
    if not text or len(text) > ERROR_TEXT_MAX_CHARS:
        raise CrontickError(f"error: expected 1 to {ERROR_TEXT_MAX_CHARS} characters, got: {len(text)}")
    before = before_id or NO_CURSOR
    params = {"before_id": before, "window": ERROR_WINDOW_JOBS, "text": text, "type": type, "limit": limit + 1}
    async with read(conn, "error search") as cur:
        await cur.execute(query("admin_jobs_error_search"), params)
        rows = await cur.fetchall()
        if len(rows) > limit:
            return rows[:limit], encode_cursor(rows[limit - 1]["id"])
        await cur.execute(query("admin_jobs_error_window_floor"), params)
        floor = await cur.fetchone()
    # A full window may have more failed jobs below it: the search goes on from its lowest id.
    full = floor is not None and int(floor["scanned"]) == ERROR_WINDOW_JOBS
    return rows, (encode_cursor(floor["lowest"]) if full and floor is not None else None)


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
    _check_role(role)
    async with action(conn, f"run job {job_id} now") as cur:
        lock = await _locked_job(
            cur, job_id, ("pending",), "a pending job", "only a job that waits for its turn can be run now"
        )
        if isinstance(lock, ActionResult):
            return lock
        await cur.execute(query("admin_job_run_now"), {"id": job_id})
        row = await cur.fetchone()
        await audit(cur, role, "run_now", {"job_id": job_id}, 1)
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
    _check_role(role)
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
        await audit(cur, role, "bulk_run_now", filt, moved)
    return moved, (last_id if picked == chunk else None)
