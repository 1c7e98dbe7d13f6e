"""Per job type figures for the last hour and day (done, failed, slow, p50 and p95 duration, oldest due job,
paused), read from the ring the tick's record statement writes, never from a scan of jobs."""

from __future__ import annotations

from typing import Any

from crontick.admin.tx import Conn, Row, read
from crontick.db import query

# The overview and GET /api/admin/types show at most this many types.
MAX_TYPES = 200
# A type's oldest due job is looked for among its first this many pending jobs (by id): at most
# MAX_TYPES x PENDING_PROBE index entries per read.
PENDING_PROBE = 100
BUCKETS = 48


def bucket_ms(bucket: int) -> float:
    """The duration a bucket stands for: its geometric middle (bucket b holds 2^(b/2) to 2^((b+1)/2) ms)."""
    return float(round(2 ** ((bucket + 0.5) / 2), 1))


def percentile(counts: dict[int, int], share: float) -> float | None:
    """The duration (ms) under which `share` of the counted attempts finished, from their buckets; None without any."""
    total = sum(counts.values())
    if total == 0:
        return None
    seen = 0
    for bucket in sorted(counts):
        seen += counts[bucket]
        if seen >= share * total:
            return bucket_ms(bucket)
    return bucket_ms(max(counts))


def _failure_rate(done: int, failed: int) -> float:
    return failed / (done + failed) if done + failed else 0.0


def worst_first(types: list[Row]) -> list[Row]:
    """Worst types first: the failure rate of the last hour, then of the day, then the oldest due job's wait."""
    return sorted(
        types,
        key=lambda t: (
            -_failure_rate(t["done_1h"], t["failed_1h"]),
            -_failure_rate(t["done_24h"], t["failed_24h"]),
            -(t["oldest_due_seconds"] or 0.0),
            t["type"],
        ),
    )


def build(figure_rows: list[Row], pending_rows: list[Row], paused: set[str]) -> list[Row]:
    """The types' figures from the rows of admin_type_figures, admin_type_pending and admin_type_pauses (pure)."""
    acc: dict[str, dict[str, Any]] = {}

    def entry(name: str) -> dict[str, Any]:
        return acc.setdefault(
            name,
            {"done_1h": 0, "failed_1h": 0, "slow_1h": 0, "done_24h": 0, "failed_24h": 0, "slow_24h": 0, "buckets": {}}
            | {"oldest": None},
        )

    for r in figure_rows:
        e = entry(r["type"])
        done, failed, ran = int(r["done"]), int(r["failed"]), int(r["done"]) + int(r["failed"]) + int(r["retried"])
        e["done_24h"] += done
        e["failed_24h"] += failed
        e["slow_24h"] += int(r["slow"])
        if r["last_hour"]:
            e["done_1h"] += done
            e["failed_1h"] += failed
            e["slow_1h"] += int(r["slow"])
            e["buckets"][int(r["bucket"])] = e["buckets"].get(int(r["bucket"]), 0) + ran
    for r in pending_rows:
        wait = r["oldest_wait_seconds"]
        entry(r["type"])["oldest"] = round(wait, 3) if wait is not None and wait >= 0 else None
    for name in paused:
        entry(name)
    out = [
        {
            "type": name,
            "done_1h": e["done_1h"],
            "failed_1h": e["failed_1h"],
            "done_24h": e["done_24h"],
            "failed_24h": e["failed_24h"],
            # Attempts that ran CRONTICK_SLOW_JOB_SECONDS or longer (logged as slow_job), whatever they ended in.
            "slow_1h": e["slow_1h"],
            "slow_24h": e["slow_24h"],
            # Over the last hour's attempts (done, retried and failed), from claim to record.
            "p50_ms": percentile(e["buckets"], 0.5),
            "p95_ms": percentile(e["buckets"], 0.95),
            "oldest_due_seconds": e["oldest"],
            "paused": name in paused,
        }
        for name, e in acc.items()
    ]
    return worst_first(out)[:MAX_TYPES]


async def type_figures(conn: Conn) -> list[Row]:
    """Every type seen in the last 24 hours, with pending jobs, or paused: its figures, worst first.

    Three short reads in one read-only transaction: the ring (bounded by its design), a skip scan
    of the types with a bounded look at each one's pending jobs, and the paused types.
    """
    async with read(conn, "job types") as cur:
        await cur.execute(query("admin_type_figures"))
        figure_rows = await cur.fetchall()
        await cur.execute(query("admin_type_pending"), {"types": MAX_TYPES, "probe": PENDING_PROBE})
        pending_rows = await cur.fetchall()
        await cur.execute(query("admin_type_pauses"), {"types": MAX_TYPES})
        paused = {r["name"] for r in await cur.fetchall()}
    return build(figure_rows, pending_rows, paused)
