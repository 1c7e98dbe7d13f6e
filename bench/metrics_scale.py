"""GET /api/metrics at scale: one scrape's statements and time on 1,000,000 done + 100,000 future jobs vs an empty database.

    python -m bench.metrics_scale [--done 1000000] [--pending 100000] [--runs 15]

Uses CRONTICK_BENCH_DATABASE_URL (else CRONTICK_TEST_DATABASE_URL), as bench.admin_scale does, and its load.
Not a timed test: it prints figures for the closing note.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from bench.admin_scale import database, load
from crontick import db
from crontick.admin import metrics
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--done", type=int, default=1_000_000)
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    server = os.environ.get("CRONTICK_BENCH_DATABASE_URL") or os.environ["CRONTICK_TEST_DATABASE_URL"]
    with database(server) as empty:
        empty_ms = scrape_ms(empty, args.runs)
    with database(server) as url:
        load(url, args.done, 10_000, args.pending)
        full_ms = scrape_ms(url, args.runs)
        _, sent = traced(url, metrics.read_figures)
    named = [name for name in sent if name in db.QUERIES]
    print(f"scrape, empty: {empty_ms:.1f} ms; {args.done:,} done + {args.pending:,} future: {full_ms:.1f} ms")
    print(f"statements per scrape: {len(named)} ({', '.join(named)}) plus BEGIN and COMMIT")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
