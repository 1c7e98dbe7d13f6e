"""Worker processes that run real ticks against the test database (for the concurrency and kill -9 tests).

They are forked from a forkserver that has imported crontick once, so eight of them start in
milliseconds instead of paying the import each; each is still a separate OS process with its
own connection.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from datetime import datetime
from multiprocessing.context import ForkServerContext, ForkServerProcess
from typing import Any

from crontick import db
from crontick.settings import Settings
from crontick.tick.pipeline import run_tick

COUNTS = ("sent", "failed", "unknown", "retried")


def context() -> ForkServerContext:
    ctx = multiprocessing.get_context("forkserver")
    assert isinstance(ctx, ForkServerContext)
    ctx.set_forkserver_preload([__name__])
    return ctx


async def ticks(values: dict[str, Any], now: datetime, mode: str) -> dict[str, int]:
    """Tick once (mode 'once') or until a tick finds nothing to do (mode 'drain'); returns summed counts."""
    settings = Settings(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})
    conn = await db.connect(values["database_url"])
    totals = dict.fromkeys(("ticks", *COUNTS), 0)
    try:
        while True:
            rem = (await run_tick(conn, settings, now=now, source="worker")).reminders
            totals["ticks"] += 1
            for name in COUNTS:
                totals[name] += getattr(rem, name)
            if mode == "once" or (not any(getattr(rem, name) for name in COUNTS) and not rem.more):
                return totals
    finally:
        await conn.close()


def worker(values: dict[str, Any], now_iso: str, mode: str, ready: Any, go: Any, results: Any) -> None:
    ready.release()
    go.wait()
    results.put(asyncio.run(ticks(values, datetime.fromisoformat(now_iso), mode)))


class Workers:
    """Start `count` workers, wait until all are ready, then release them together."""

    def __init__(self, count: int, values: dict[str, Any], now: datetime, mode: str) -> None:
        ctx = context()
        self.ready = ctx.Semaphore(0)
        self.go = ctx.Event()
        self.results = ctx.Queue()
        self.procs: list[ForkServerProcess] = [
            ctx.Process(target=worker, args=(values, now.isoformat(), mode, self.ready, self.go, self.results))
            for _ in range(count)
        ]
        for p in self.procs:
            p.start()
        for _ in self.procs:
            assert self.ready.acquire(timeout=60), "a worker did not start"
        self.go.set()

    def finish(self, timeout: float = 60) -> list[dict[str, int]]:
        results = [self.results.get(timeout=timeout) for _ in self.procs]
        for p in self.procs:
            p.join(timeout)
            assert p.exitcode == 0, f"worker {p.pid} exited with {p.exitcode}"
        return results
