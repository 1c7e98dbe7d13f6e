"""GET /api/metrics at scale: one scrape's statements and time on 1,000,000 done + 100,000 future jobs vs an empty database.

    python -m bench.metrics_scale [--done 1000000] [--pending 100000] [--runs 15] [--baseline FILE]

--baseline FILE: another version's sql/metrics.sql (`git show main:sql/metrics.sql > /tmp/old.sql`); its
metrics_read is timed against this one's on the same loaded database, runs interleaved, so the machine's load
weighs on both alike.

Uses CRONTICK_BENCH_DATABASE_URL (else CRONTICK_TEST_DATABASE_URL), as bench.admin_scale does, and its load.
Not a timed test: it prints figures for the closing note.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

from bench.admin_scale import database, load
from crontick import db
from crontick.admin import metrics
from crontick.admin.tx import read
from crontick.db import schema
from crontick.db.queries import parse_queries, without_comment_lines
from tests.support.wire import traced


def scrape_ms(url: str, runs: int) -> float:
    """The median of `runs` scrapes' reads (read_figures and the exposition), in milliseconds, on one connection."""

    async def go() -> float:
        conn = await db.connect(url)
        try:
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                metrics.exposition(metrics.families(await metrics.read_figures(conn)))
                times.append((time.perf_counter() - t0) * 1000)
            return statistics.median(times)
        finally:
            await conn.close()

    return asyncio.run(go())


def paired_ms(url: str, baseline: str, runs: int) -> tuple[float, float]:
    """Medians of `runs` executions each of this metrics_read and `baseline`'s, interleaved, in milliseconds."""
    other = schema.compose(without_comment_lines(parse_queries(baseline)["metrics_read"]), "crontick")
    params = {"cap": metrics.COUNT_CAP, "types": metrics.MAX_TYPES, "limits": "[]"}

    async def go() -> tuple[float, float]:
        conn = await db.connect(url)
        times: dict[str, list[float]] = {"this": [], "baseline": []}
        try:
            for _ in range(runs):
                for which, statement in (("this", db.query("metrics_read")), ("baseline", other)):
                    async with read(conn, "metrics") as cur:
                        t0 = time.perf_counter()
                        await cur.execute(statement, params)
                        await cur.fetchone()
                        times[which].append((time.perf_counter() - t0) * 1000)
        finally:
            await conn.close()
        return statistics.median(times["this"]), statistics.median(times["baseline"])

    return asyncio.run(go())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--done", type=int, default=1_000_000)
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--baseline", type=Path, help="another version's sql/metrics.sql, timed against this one")
    args = parser.parse_args(argv)
    server = os.environ.get("CRONTICK_BENCH_DATABASE_URL") or os.environ["CRONTICK_TEST_DATABASE_URL"]
    with database(server) as empty:
        empty_ms = scrape_ms(empty, args.runs)
    with database(server) as url:
        load(url, args.done, 10_000, args.pending)
        full_ms = scrape_ms(url, args.runs)
        _, sent = traced(url, metrics.read_figures)
        paired = paired_ms(url, args.baseline.read_text(encoding="utf-8"), args.runs) if args.baseline else None
    named = [name for name in sent if name in db.QUERIES]
    print(f"scrape, empty: {empty_ms:.1f} ms; {args.done:,} done + {args.pending:,} future: {full_ms:.1f} ms")
    print(f"statements per scrape: {len(named)} ({', '.join(named)}) plus BEGIN and COMMIT")
    if paired is not None:
        print(f"metrics_read at that size, interleaved: this {paired[0]:.1f} ms, {args.baseline}: {paired[1]:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
