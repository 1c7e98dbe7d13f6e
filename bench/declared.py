"""Ticks with 1,000 schedules and 100 inbound hooks declared (issue 13): what the declarations cost a tick.

1. The idle tick over HTTP keep-alive, against the same app with nothing declared: two uvicorn
   servers, each on its own database, called in turn (medians; the order alternates).
2. In-process, on a traced connection: the first tick, which syncs the 1,000 declarations, and
   a tick in which all 1,000 come due at once (their cursors moved back a day, so each has one
   slot to enqueue): its time and its statements, counted on the wire.

`python -m bench.declared [DATABASE_URL]` runs it alone (an admin URL that may create databases;
CRONTICK_BENCH_DATABASE_URL or an embedded server when none is given).
"""

from __future__ import annotations

import asyncio
import re
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import pq

from crontick import db
from crontick.settings import Settings
from crontick.tick.pipeline import TickResult, run_tick

from . import declared_handlers, http_drain, server
from .declared_handlers import HOOKS_VARIABLE, SCHEDULES_VARIABLE
from .noop import HANDLER_MODULE
from .systems import crontick_install

SCHEDULES = 1000
HOOKS = 100
STATEMENT = re.compile(rb"^F\t\d+\t(Parse|Query)\t", re.MULTILINE)  # one per statement, as tests/perf counts them
WARM_UP = 20


async def idle_side_by_side(base_none: str, base_declared: str, requests: int) -> dict[str, Any]:
    """Median latency of an idle tick on each server, called in turn on one keep-alive connection each."""
    headers = {"Authorization": f"Bearer {http_drain.SECRET}"}
    times: dict[str, list[float]] = {base_none: [], base_declared: []}
    async with httpx.AsyncClient(timeout=30) as none_client, httpx.AsyncClient(timeout=30) as declared_client:
        pairs = [(base_none, none_client), (base_declared, declared_client)]
        for i in range(requests + WARM_UP):
            for base, client in pairs if i % 2 else pairs[::-1]:
                began = time.perf_counter()
                response = await client.post(f"{base}/api/cron/tick", headers=headers)
                elapsed = time.perf_counter() - began
                summary = response.json()
                if response.status_code != 200 or summary["jobs"]["claimed"] or summary["more"]:
                    raise RuntimeError(f"expected an idle tick, got {response.status_code}: {response.text}")
                if i >= WARM_UP:
                    times[base].append(elapsed)
    none_ms, declared_ms = (statistics.median(times[b]) * 1000 for b in (base_none, base_declared))
    return {
        "requests": requests,
        "none_ms": round(none_ms, 3),
        "declared_ms": round(declared_ms, 3),
        "ratio": round(declared_ms / none_ms, 2),
    }


async def traced_tick(url: str, settings: Settings) -> tuple[TickResult, float, int]:
    """One tick on a fresh connection: its result, its milliseconds, and the statements it sent."""
    conn = await db.connect(url)
    try:
        with tempfile.TemporaryFile() as trace:
            conn.pgconn.trace(trace.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
            began = time.perf_counter()
            try:
                result = await run_tick(conn, settings, source="bench")
            finally:
                elapsed_ms = (time.perf_counter() - began) * 1000
                conn.pgconn.untrace()
            trace.seek(0)
            statements = len(STATEMENT.findall(trace.read()))
    finally:
        await conn.close()
    return result, elapsed_ms, statements


def make_all_due(url: str) -> None:
    """Every schedule's cursor a day back, its slot rows and jobs gone: each has one slot to enqueue."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("truncate jobs, crontick_schedule_slots cascade")
        conn.execute(
            "update crontick_schedules set evaluated_until = evaluated_until - interval '1 day', next_at = '-infinity'"
        )
        conn.execute("analyze")


async def due_ticks(url: str, runs: int) -> dict[str, Any]:
    settings = Settings(database_url=url, cron_secret=http_drain.SECRET, reminder_channel="console")
    declared_handlers.declare(SCHEDULES, HOOKS)
    try:
        synced, sync_ms, sync_statements = await traced_tick(url, settings)
        if synced.jobs.claimed or synced.schedules.enqueued:
            raise RuntimeError(f"expected the first tick only to sync, got {synced.to_json()}")
        idle, idle_ms, idle_statements = await traced_tick(url, settings)
        ms, statements, decided, claimed = [], set(), set(), set()
        for _ in range(runs):
            make_all_due(url)
            result, elapsed, sent = await traced_tick(url, settings)
            ms.append(elapsed)
            statements.add(sent)
            decided.add(result.schedules)
            claimed.add(result.jobs.claimed)
        # A third of them catch up with "skip": a slot half a day old is past the grace, so skipped.
        if {enqueued + skipped for enqueued, skipped in decided} != {SCHEDULES}:
            raise RuntimeError(f"expected every run to decide {SCHEDULES} slots, got: {sorted(decided)}")
    finally:
        declared_handlers.forget()
    return {
        "sync_tick": {"ms": round(sync_ms, 2), "statements": sync_statements},
        "idle_tick_in_process": {"ms": round(idle_ms, 2), "statements": idle_statements},
        "all_due": {
            "runs": runs,
            "median_ms": round(statistics.median(ms), 2),
            "runs_ms": [round(m, 2) for m in ms],
            "statements": sorted(statements),
            "enqueued": sorted(d.enqueued for d in decided),
            "skipped": sorted(d.skipped for d in decided),
            "claimed": sorted(claimed),
        },
    }


async def measure(admin: str, workdir: Path, requests: int, runs: int) -> dict[str, Any]:
    none_url = server.fresh_database(admin, "crontick_bench_declared_none")
    declared_url = server.fresh_database(admin, "crontick_bench_declared")
    for url in (none_url, declared_url):
        await crontick_install(url)
    declared_env = {
        "CRONTICK_HANDLERS": f"{HANDLER_MODULE},{declared_handlers.HANDLER_MODULE}",
        SCHEDULES_VARIABLE: str(SCHEDULES),
        HOOKS_VARIABLE: str(HOOKS),
    }
    with (
        http_drain.server(none_url, workdir / "seen-declared-none") as base_none,
        http_drain.server(declared_url, workdir / "seen-declared", extra_env=declared_env) as base_declared,
    ):
        idle = await idle_side_by_side(base_none, base_declared, requests)
    # The in-process ticks run on the database the declaring server synced: nothing new to sync
    # there, so use a third, fresh one for the first-sight sync.
    due_url = server.fresh_database(admin, "crontick_bench_declared_due")
    await crontick_install(due_url)
    due = await due_ticks(due_url, runs)
    for name in ("crontick_bench_declared_none", "crontick_bench_declared", "crontick_bench_declared_due"):
        server.drop_database(admin, name)
    return {"schedules": SCHEDULES, "hooks": HOOKS, "idle": idle, **due}


def rows(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The report's rows: (what, ms, statements)."""
    idle, due = result["idle"], result["all_due"]
    n, h = f"{result['schedules']:,}", result["hooks"]
    in_process = result["idle_tick_in_process"]
    return [
        ("idle tick over HTTP, nothing declared", f"{idle['none_ms']:.2f}", ""),
        (f"idle tick over HTTP, {n} schedules + {h} hooks declared", f"{idle['declared_ms']:.2f}", ""),
        ("  ratio", f"{idle['ratio']:.2f}×", ""),
        (f"idle tick in-process, {n} + {h} declared", "", str(in_process["statements"])),
        (
            f"first tick in-process: syncs the {n} declarations",
            f"{result['sync_tick']['ms']:.1f}",
            str(result["sync_tick"]["statements"]),
        ),
        (
            f"tick in-process: all {n} due at once (enqueues {_each(due['enqueued'])}, skips"
            f" {_each(due['skipped'])}, runs {_each(due['claimed'])})",
            f"{due['median_ms']:.1f}",
            _each(due["statements"]),
        ),
    ]


def _each(values: list[int]) -> str:
    return "/".join(f"{v:,}" for v in values)


def main() -> None:
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="crontick-bench-declared-") as work:
        if len(sys.argv) > 1:
            import os

            os.environ[server.URL_VARIABLE] = sys.argv[1]
        admin = server.admin_url(stack)
        result = asyncio.run(measure(admin, Path(work), 300, 5))
    from .report import table

    print(table("declared at scale (medians)", ("tick", "ms", "statements"), rows(result)))


if __name__ == "__main__":
    main()
