"""The overview's reads over PostgreSQL: capped counts per status, the scheduler's health, the hourly chart, and the
ticks (each with the gap since the one before). Per-type figures are crontick.admin.overview.figures'."""

from __future__ import annotations

from datetime import datetime

from crontick.admin.tx import NO_CURSOR, Conn, Row, check_limit, keyset_page, read
from crontick.db import query

COUNT_CAP = 10_000
DEFAULT_EXPECTED_INTERVAL_SECONDS = 900.0


async def stats(conn: Conn, *, expected_interval_seconds: float = DEFAULT_EXPECTED_INTERVAL_SECONDS) -> Row:
    """Counts per status (each capped: COUNT_CAP + 1 means "more than COUNT_CAP"), the oldest due
    job's wait, the scheduler's last tick and staleness, done/failed per hour for 24 h, and the
    wake-ups (CRONTICK_WAKER): the next booked, the last failure, booked and failed in the last day."""
    async with read(conn, "stats") as cur:
        await cur.execute(query("admin_stats_counts"), {"cap": COUNT_CAP + 1})
        counts = {r["status"]: int(r["n"]) for r in await cur.fetchall()}
        await cur.execute(query("admin_stats_health"))
        health = await cur.fetchone()
        await cur.execute(query("admin_stats_hourly"))
        hourly = await cur.fetchall()
        await cur.execute(query("wakeup_status"), {"now": None})  # precise wake-ups (crontick.wakers.booking.status)
        wakeups = await cur.fetchone()
    assert health is not None and wakeups is not None  # one row always
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
        "wakeups": {k: int(v) if k.endswith("_last_day") else v for k, v in wakeups.items()},
    }


async def list_ticks(
    conn: Conn,
    *,
    before_id: int | None = None,
    limit: int = 50,
    expected_interval_seconds: float = DEFAULT_EXPECTED_INTERVAL_SECONDS,
) -> tuple[list[Row], str | None]:
    """Ticks newest first, each with `gap_seconds` since the previous tick started and `gap_flagged`
    when that is over twice the expected interval (the scheduler missed a call)."""
    check_limit(limit)
    async with read(conn, "ticks list") as cur:
        await cur.execute(query("admin_ticks"), {"before_id": before_id or NO_CURSOR, "limit": limit + 1})
        rows = await cur.fetchall()
    for row, older in zip(rows, [*rows[1:], None], strict=False):  # no ticks yet: no pairs
        gap = (row["started_at"] - older["started_at"]).total_seconds() if older else None
        row["gap_seconds"] = gap
        row["gap_flagged"] = gap is not None and gap > 2 * expected_interval_seconds
    return keyset_page(rows, limit)
