"""The jobs' lists that read past the status index: pending jobs split into due and scheduled (on run_after), and the
failed jobs' error search (bounded windows of the newest failed jobs)."""

from __future__ import annotations

from crontick.admin.jobs import ERROR_TEXT_MAX_CHARS, ERROR_WINDOW_JOBS, PENDING_SPLIT
from crontick.admin.tx import NO_CURSOR, Conn, Row, check_limit, encode_cursor, keyset_page, read
from crontick.db import query
from crontick.errors import CrontickError

__all__ = ["ERROR_TEXT_MAX_CHARS", "ERROR_WINDOW_JOBS", "PENDING_SPLIT", "list_pending", "search_errors"]


async def list_pending(
    conn: Conn, *, split: str, type: str | None = None, before_id: int | None = None, limit: int = 50
) -> tuple[list[Row], str | None]:
    """Pending jobs that are due (`split="due"`) or due later (`"scheduled"`), newest first, keyset by id."""
    check_limit(limit)
    if split not in PENDING_SPLIT:
        raise CrontickError(f"status: expected one of {', '.join(PENDING_SPLIT)}, got: {split!r}")
    name = f"admin_jobs_{split}" + ("_by_type" if type is not None else "")
    async with read(conn, f"{split} jobs") as cur:
        await cur.execute(query(name), {"before_id": before_id or NO_CURSOR, "limit": limit + 1, "type": type})
        rows = await cur.fetchall()
    return keyset_page(rows, limit)


async def search_errors(
    conn: Conn, text: str, *, type: str | None = None, before_id: int | None = None, limit: int = 50
) -> tuple[list[Row], str | None]:
    """Failed jobs whose last_error contains `text` (case ignored), newest first.

    Bounded: a page reads at most ERROR_WINDOW_JOBS failed jobs below its cursor, so a page may
    hold fewer than `limit` rows and still have a next cursor, where the search goes on below.
    """
    check_limit(limit)
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
